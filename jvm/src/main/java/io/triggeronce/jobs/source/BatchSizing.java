package io.triggeronce.jobs.source;

/** How many bytes of new files a query's next batch takes, from what its last batch left in
 * state (jobs/flow/admission.py says why). */
public final class BatchSizing {
    private BatchSizing() {}

    /** One choice: the batch after `afterBatch` takes about `maxBytes`; the state held
     * `stateBytes` once `afterBatch` had read `inputBytes`. */
    public record Choice(long afterBatch, long maxBytes, long stateBytes, long inputBytes) {}

    /**
     * The next batch's bytes: as many as would grow the state by at most what is left of
     * `budget`, had each byte the weight the last batch's bytes had (the whole state over
     * them: no more than it, however much of that state came from before), between `floor`
     * (the default) and `cap`.
     */
    public static long next(long floor, long cap, long budget, long stateBytes, long inputBytes) {
        if (inputBytes <= 0) {
            return floor; // nothing measured
        }
        if (stateBytes <= 0) {
            return Math.max(floor, cap); // a pattern that keeps nothing
        }
        double room = budget - stateBytes;
        double sized = room <= 0 ? 0 : inputBytes * (room / stateBytes);
        return Math.max(floor, Math.min(cap, (long) Math.min(sized, Long.MAX_VALUE)));
    }
}
