package io.triggeronce.jobs.source;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class BatchSizingTest {
    private static final long MiB = 1 << 20;
    private static final long FLOOR = 64 * MiB, CAP = 128 * MiB, BUDGET = 256 * MiB;

    @Test
    void aSmallStateTakesTheCapAndNoStateTakesItToo() {
        assertEquals(CAP, BatchSizing.next(FLOOR, CAP, BUDGET, 4 * MiB, 64 * MiB));
        assertEquals(CAP, BatchSizing.next(FLOOR, CAP, BUDGET, 0, 64 * MiB));
    }

    @Test
    void betweenTheyGrowTheStateByAtMostWhatIsLeftOfTheBudget() {
        // 160 MiB held after 64 MiB read: 96 MiB left, at 2.5 bytes of state a byte: 38.4 MiB.
        assertEquals(FLOOR, BatchSizing.next(FLOOR, CAP, BUDGET, 160 * MiB, 64 * MiB));
        // 80 MiB after 64: 176 left at 1.25 a byte, 140.8 MiB: the cap.
        assertEquals(CAP, BatchSizing.next(FLOOR, CAP, BUDGET, 80 * MiB, 64 * MiB));
        // 128 MiB after 64: 128 left at 2 a byte: 64 MiB; 100 after 64: 156 left at 1.5625: 99.84 MiB.
        assertEquals(64 * MiB, BatchSizing.next(FLOOR, CAP, BUDGET, 128 * MiB, 64 * MiB));
        long sized = BatchSizing.next(FLOOR, CAP, BUDGET, 100 * MiB, 64 * MiB);
        assertEquals(99.84, sized / (double) MiB, 0.01);
    }

    @Test
    void aStatePastItsBudgetOrNothingMeasuredKeepsTheDefault() {
        assertEquals(FLOOR, BatchSizing.next(FLOOR, CAP, BUDGET, 300 * MiB, 64 * MiB));
        assertEquals(FLOOR, BatchSizing.next(FLOOR, CAP, BUDGET, 4 * MiB, 0));
    }
}
