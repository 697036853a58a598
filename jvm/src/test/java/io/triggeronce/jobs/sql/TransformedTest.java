package io.triggeronce.jobs.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.triggeronce.jobs.tally.FileCounts;
import io.triggeronce.jobs.tally.Tally;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TransformedTest {
    private static final long T1 = 1_690_711_260_000_000L;

    @Test
    void recordsTheTransformDropsStayFilteredAndTheOnesItGivesBackCanBeLate() {
        Tally tally = new Tally();
        Count count = new Count(tally, List.of(), true);
        Transformed transformed = new Transformed(tally, "mine:tag");
        for (int i = 0; i < 3; i++) {
            assertEquals(true, count.call("a.json", null, false, 0L, null, null, false, null));
        }
        assertEquals(true, count.call("a.json", null, false, 0L, null, null, true, null)); // `where`
        assertEquals(true, transformed.call("a.json", T1)); // one of the three is given back
        FileCounts a = tally.value().values().iterator().next().values().iterator().next().get("a.json");
        assertEquals(4, a.records);
        assertEquals(3, a.filtered); // the `where`'s one, and the two the transform dropped
        assertEquals(Map.of(T1, 1L), a.lateAt);
    }

    @Test
    void aTransformThatGivesBackMoreThanItWasHandedFailsNamingItself() {
        Tally tally = new Tally();
        Count count = new Count(tally, List.of(), true);
        Transformed transformed = new Transformed(tally, "mine:explode");
        count.call("a.json", null, false, 0L, null, null, false, null);
        transformed.call("a.json", null);
        IllegalStateException error = assertThrows(IllegalStateException.class, () -> transformed.call("a.json", null));
        assertTrue(error.getMessage().contains("transform mine:explode gave back more records of a.json"));
        assertThrows(IllegalStateException.class, () -> transformed.call("b.json", null)); // never handed in
    }
}
