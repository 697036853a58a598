package io.triggeronce.jobs.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.triggeronce.jobs.tally.FileCounts;
import io.triggeronce.jobs.tally.Tally;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;

class CountTest {
    @Test
    void eachRecordIsCountedByFileAndOnlyQuarantinedOnesBringTheirLine() {
        Tally tally = new Tally();
        Count count = new Count(tally, List.of("known_event", "has_id"), false);
        long t1 = 1_690_711_260_000_000L;
        assertEquals(true, count.call("a.json", t1, false, 3L, null, null, false, null));
        assertEquals(true, count.call("a.json", t1 + 60_000_000L, true, 2L, null, null, false, null));
        assertEquals(false, count.call("b.json", null, true, 0L, "malformed_json", RowFactory.create(0L, 3L, "{x", "JSON is malformed"), null, null));
        assertEquals(true, count.call("b.json", t1, false, 2L, null, null, null, null));
        // Filtered by `where`: usable (on to the watermark), counted as filtered, never late.
        assertEquals(true, count.call("b.json", t1 - 60_000_000L, false, 0L, null, null, true, null));
        Map<String, FileCounts> files = tally.value().values().iterator().next().values().iterator().next();
        FileCounts a = files.get("a.json");
        FileCounts b = files.get("b.json");
        assertEquals(2, a.records);
        assertEquals(1, a.rescued); // the usable ones only
        assertEquals(Map.of("known_event", 1L, "has_id", 2L), a.violations); // a record breaking both counts for each
        assertEquals(Map.of("has_id", 1L), b.violations);
        assertEquals(Map.of(t1, 1L, t1 + 60_000_000L, 1L), a.lateAt);
        assertEquals(List.of(new FileCounts.Quarantined(0, 3, "{x", "malformed_json", "JSON is malformed")), b.quarantined);
        assertEquals(Map.of(t1, 1L), b.lateAt); // the quarantined record is not late too, nor the filtered one
        assertEquals(1, b.filtered);
        assertEquals(0, a.filtered);
        assertEquals(-1, tally.distinctKeys()); // no keys handed in
    }

    @Test
    void theKeysOfUsableRecordsTheWhereKeepsAreCountedOncePerBatch() {
        Tally tally = new Tally();
        Count count = new Count(tally, List.of(), false);
        for (long key = 0; key < 1_000; key++) {
            count.call("a.json", null, false, 0L, null, null, false, key);
            count.call("a.json", null, false, 0L, null, null, false, key); // seen again
        }
        count.call("a.json", null, false, 0L, "malformed_json", RowFactory.create(0L, 1L, "{", "bad"), null, 5_000L); // quarantined
        count.call("a.json", null, false, 0L, null, null, true, 6_000L); // filtered
        tally.takeBatch(-1); // outside a task: batch -1
        assertEquals(true, Math.abs(tally.distinctKeys() - 1_000) <= 30, "estimate " + tally.distinctKeys());
    }
}
