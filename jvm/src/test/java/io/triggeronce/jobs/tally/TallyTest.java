package io.triggeronce.jobs.tally;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class TallyTest {
    private static Tally attempt(long batch, int stage, int partition, long attempt, long lines) {
        Tally tally = new Tally();
        FileCounts counts = new FileCounts();
        counts.lines = lines;
        counts.lineBytes = 10 * lines;
        counts.records = lines;
        java.util.Map<String, FileCounts> files = new java.util.HashMap<>();
        files.put("file:///a.json", counts);
        java.util.Map<Long, java.util.Map<String, FileCounts>> attempts = new java.util.HashMap<>();
        attempts.put(attempt, files);
        tally.value().put(new Tally.TaskKey(batch, stage, partition), attempts);
        return tally;
    }

    @Test
    void aTaskSparkRanTwiceCountsOnceAndLaterBatchesStay() {
        Tally driver = new Tally();
        driver.merge(attempt(3, 1, 0, 10, 5));
        driver.merge(attempt(3, 1, 0, 11, 5)); // the same task, run again
        driver.merge(attempt(3, 1, 1, 12, 2));
        driver.merge(attempt(4, 2, 0, 13, 7)); // the next batch's
        String taken = driver.takeBatch(3);
        assertEquals(true, taken.contains("\"lines\":7,\"line_bytes\":70"), taken);
        assertEquals("{}", driver.takeBatch(3)); // taken out
        assertEquals(true, driver.takeBatch(4).contains("\"lines\":7"));
    }

    @Test
    void keysOfEveryAttemptAreMergedAndTakenWithTheirBatch() {
        Tally task = new Tally(); // outside a task its keys are batch -1's
        for (long key = 0; key < 100; key++) {
            task.keys().add(key);
        }
        Tally again = new Tally(); // the same task run again, and more keys
        for (long key = 50; key < 150; key++) {
            again.keys().add(key);
        }
        Tally driver = new Tally();
        driver.merge(task);
        driver.merge(again);
        assertEquals(-1, driver.distinctKeys()); // not taken yet
        driver.takeBatch(-1);
        assertEquals(150, driver.distinctKeys());
        driver.takeBatch(-1); // nothing more of it
        assertEquals(150, driver.distinctKeys());
    }
}
