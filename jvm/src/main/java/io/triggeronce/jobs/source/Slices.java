package io.triggeronce.jobs.source;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * A batch's files as the tasks that read them: each file cut into slices of at most a split's
 * bytes (a compressed file whole: it reads only from its start), slices packed into tasks
 * largest first, each task filled to a split's bytes counting every file opened as
 * `openCostBytes` more, as Spark's own file sources pack them.
 */
final class Slices {
    private Slices() {}

    /** A file to read: where (a %-encoded URI), its size and whether it can be read in parts. */
    record File(String uri, long size, boolean splittable) implements Serializable {}

    /** Part of a file: its bytes from `start`, `length` of them (a line belongs to the slice it starts in). */
    record Slice(String uri, long start, long length, long fileSize) implements Serializable {}

    /** What one task reads. */
    record Task(List<Slice> slices) implements InputPartition {}

    /** The most bytes a slice holds: the split size, or less when the batch is small enough to
     * give every core (`minTasks`) a share. */
    static long splitBytes(List<File> files, long maxSplitBytes, long openCostBytes, int minTasks) {
        long total = 0;
        for (File file : files) {
            total += file.size() + openCostBytes;
        }
        long perCore = total / Math.max(1, minTasks);
        return Math.min(maxSplitBytes, Math.max(openCostBytes, perCore));
    }

    static List<Task> tasks(List<File> files, long maxSplitBytes, long openCostBytes, int minTasks) {
        long split = splitBytes(files, maxSplitBytes, openCostBytes, minTasks);
        List<Slice> slices = new ArrayList<>();
        for (File file : files) {
            if (file.size() <= 0) {
                continue; // nothing to read
            }
            if (!file.splittable()) {
                slices.add(new Slice(file.uri(), 0, file.size(), file.size()));
                continue;
            }
            for (long start = 0; start < file.size(); start += split) {
                slices.add(new Slice(file.uri(), start, Math.min(split, file.size() - start), file.size()));
            }
        }
        slices.sort(Comparator.comparingLong(Slice::length).reversed());
        List<Task> tasks = new ArrayList<>();
        List<Slice> current = new ArrayList<>();
        long size = 0;
        for (Slice slice : slices) {
            if (!current.isEmpty() && size + slice.length() > split) {
                tasks.add(new Task(List.copyOf(current)));
                current.clear();
                size = 0;
            }
            current.add(slice);
            size += slice.length() + openCostBytes;
        }
        if (!current.isEmpty()) {
            tasks.add(new Task(List.copyOf(current)));
        }
        return tasks;
    }
}
