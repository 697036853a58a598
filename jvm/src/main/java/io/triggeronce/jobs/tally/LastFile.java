package io.triggeronce.jobs.tally;

import org.apache.spark.TaskContext;

/**
 * The counts of the file a task's last row came from: rows come a part of a file at a time,
 * so they mostly serve the next row too, without a lookup in the tally. And the keys of the
 * task's batch, found once an attempt.
 */
public final class LastFile {
    private String file;
    private long attempt = -1;
    private FileCounts counts;
    private long keysAttempt = -1;
    private Keys keys;

    public FileCounts counts(Tally tally, String name) {
        long now = attempt();
        if (counts == null || now != attempt || !name.equals(file)) {
            counts = tally.file(name);
            file = name;
            attempt = now;
        }
        return counts;
    }

    public Keys keys(Tally tally) {
        long now = attempt();
        if (keys == null || now != keysAttempt) {
            keys = tally.keys();
            keysAttempt = now;
        }
        return keys;
    }

    private static long attempt() {
        TaskContext context = TaskContext.get();
        return context == null ? 0 : context.taskAttemptId();
    }
}
