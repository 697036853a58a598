package io.triggeronce.jobs.tally;

import org.apache.spark.TaskContext;

/**
 * The counts of the file a task's last row came from: rows come a part of a file at a time,
 * so they mostly serve the next row too, without a lookup in the tally.
 */
public final class LastFile {
    private String file;
    private long attempt = -1;
    private FileCounts counts;

    public FileCounts counts(Tally tally, String name) {
        TaskContext context = TaskContext.get();
        long now = context == null ? 0 : context.taskAttemptId();
        if (counts == null || now != attempt || !name.equals(file)) {
            counts = tally.file(name);
            file = name;
            attempt = now;
        }
        return counts;
    }
}
