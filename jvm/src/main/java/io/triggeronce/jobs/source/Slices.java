package io.triggeronce.jobs.source;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * A batch's files as the tasks that read them: each file cut into slices of at most a split's
 * bytes (a compressed file whole: it reads only from its start), counting every file opened as
 * `openCostBytes` more, as Spark's own file sources count them; then as many tasks as splits
 * that makes, a multiple of the cores, the slices dealt largest first to the task with the
 * fewest bytes so far. Spark fills each task to a split's bytes instead, which leaves a last
 * small task that one core reads while the others wait: 43 equal files on two cores made
 * tasks of 21, 21 and 1 files.
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
        long perCore = ceilDiv(total, Math.max(1, minTasks)); // up: the batch makes `minTasks` splits, not one more
        return Math.min(maxSplitBytes, Math.max(openCostBytes, perCore));
    }

    private static long ceilDiv(long bytes, long parts) { // Math.ceilDiv is Java 18's
        return -Math.floorDiv(-bytes, parts);
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
        if (slices.isEmpty()) {
            return List.of();
        }
        slices.sort(Comparator.comparingLong(Slice::length).reversed());
        long cost = 0;
        for (Slice slice : slices) {
            cost += slice.length() + openCostBytes;
        }
        int cores = Math.max(1, minTasks);
        long splits = ceilDiv(cost, split);
        int count = (int) Math.min(slices.size(), ceilDiv(splits, cores) * cores);
        long[] bytes = new long[count];
        List<List<Slice>> dealt = new ArrayList<>();
        PriorityQueue<Integer> fewest = new PriorityQueue<>(
                Comparator.<Integer>comparingLong(task -> bytes[task]).thenComparing(task -> task));
        for (int task = 0; task < count; task++) {
            dealt.add(new ArrayList<>());
            fewest.add(task);
        }
        for (Slice slice : slices) {
            int task = fewest.poll();
            dealt.get(task).add(slice);
            bytes[task] += slice.length() + openCostBytes;
            fewest.add(task);
        }
        List<Task> tasks = new ArrayList<>();
        for (List<Slice> task : dealt) {
            tasks.add(new Task(List.copyOf(task)));
        }
        return tasks;
    }
}
