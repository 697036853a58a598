package io.triggeronce.jobs.source;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** How many bytes of new files a query's next batch takes, from what its last batch left in
 * state (jobs/flow/admission.py says why), and each choice, kept for the run's report. */
public final class BatchSizing {
    private BatchSizing() {}

    /** One choice: the batch after `afterBatch` takes about `maxBytes`; the state held
     * `stateBytes` once `afterBatch` had read `inputBytes`. */
    public record Choice(long afterBatch, long maxBytes, long stateBytes, long inputBytes) {}

    private static final Map<String, List<Choice>> CHOICES = new ConcurrentHashMap<>();

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

    static void record(String queryId, Choice choice) {
        CHOICES.computeIfAbsent(queryId, id -> new ArrayList<>()).add(choice);
    }

    /** The choices made for query `queryId` so far, as JSON, forgotten here once taken. */
    public static String take(String queryId) {
        List<Choice> choices = CHOICES.remove(queryId);
        StringBuilder json = new StringBuilder("[");
        for (Choice c : choices == null ? List.<Choice>of() : choices) {
            json.append(json.length() > 1 ? "," : "")
                .append(String.format(
                    "{\"after_batch\":%d,\"max_bytes\":%d,\"state_bytes\":%d,\"input_bytes\":%d}",
                    c.afterBatch(), c.maxBytes(), c.stateBytes(), c.inputBytes()));
        }
        return json.append("]").toString();
    }
}
