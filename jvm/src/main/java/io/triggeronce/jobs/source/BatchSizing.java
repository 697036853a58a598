package io.triggeronce.jobs.source;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
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
        StringWriter text = new StringWriter();
        try (JsonGenerator out = new JsonFactory().createGenerator(text)) {
            out.writeStartArray();
            for (Choice choice : choices == null ? List.<Choice>of() : choices) {
                out.writeStartObject();
                out.writeNumberField("after_batch", choice.afterBatch());
                out.writeNumberField("max_bytes", choice.maxBytes());
                out.writeNumberField("state_bytes", choice.stateBytes());
                out.writeNumberField("input_bytes", choice.inputBytes());
                out.writeEndObject();
            }
            out.writeEndArray();
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return text.toString();
    }
}
