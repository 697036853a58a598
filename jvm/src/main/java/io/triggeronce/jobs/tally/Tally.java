package io.triggeronce.jobs.tally;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.util.AccumulatorV2;

/**
 * Each batch's rows, counted as the query reads them, per landed file (what
 * jobs/flow/tally.py's Tally keeps, in the JVM): the lines the decoder read and the blank
 * ones, the records, those with a value rescued, each rule's violations, the time at or
 * before which each usable record is late, and the quarantined ones with where they are;
 * and per batch, the distinct keys of the records its pattern reads ({@link Keys}).
 *
 * <p>Exact when Spark runs a task again: a task's counts are kept under (batch, stage,
 * partition) and its attempt, and a batch is taken with one attempt of each task, as
 * many as Spark ran. The batch is the local property Spark sets on every job of a
 * micro-batch (reading a batch again sets it too). The counts travel with each task's
 * result to the driver, which holds a batch's until it is taken.
 */
public final class Tally extends AccumulatorV2<Object, Map<Tally.TaskKey, Map<Long, Map<String, FileCounts>>>> {
    private static final long serialVersionUID = 1L;
    public static final String BATCH_ID = "streaming.sql.batchId";

    public record TaskKey(long batch, int stage, int partition) implements java.io.Serializable {}

    private Map<TaskKey, Map<Long, Map<String, FileCounts>>> counts = new HashMap<>();
    private Map<Long, Keys> keys = new HashMap<>(); // batch -> its keys, every attempt merged
    private transient long attempt = -1;
    private transient Map<String, FileCounts> current;
    private transient Keys runKeys; // on the driver: the keys of every batch taken

    /** In a task: the keys of the task's batch, made on first use (call once per attempt). */
    public Keys keys() {
        TaskContext context = TaskContext.get();
        String batch = context == null ? null : context.getLocalProperty(BATCH_ID);
        return keys.computeIfAbsent(batch == null ? -1L : Long.parseLong(batch), b -> new Keys());
    }

    /** In a task: the counts of this file for the task's batch and attempt, made on first use. */
    public FileCounts file(String name) {
        TaskContext context = TaskContext.get(); // none outside a task (a unit test): batch -1
        long now = context == null ? 0 : context.taskAttemptId();
        if (now != attempt || current == null) {
            attempt = now;
            String batch = context == null ? null : context.getLocalProperty(BATCH_ID);
            TaskKey key = context == null
                    ? new TaskKey(-1, -1, -1)
                    : new TaskKey(batch == null ? -1 : Long.parseLong(batch), context.stageId(), context.partitionId());
            current = counts.computeIfAbsent(key, k -> new HashMap<>()).computeIfAbsent(attempt, a -> new HashMap<>());
        }
        return current.computeIfAbsent(name, n -> new FileCounts());
    }

    @Override
    public boolean isZero() {
        synchronized (this) {
            return counts.isEmpty() && keys.isEmpty();
        }
    }

    @Override
    public AccumulatorV2<Object, Map<TaskKey, Map<Long, Map<String, FileCounts>>>> copy() {
        Tally copy = new Tally();
        synchronized (this) {
            copy.merge(this);
        }
        return copy;
    }

    @Override
    public void reset() {
        synchronized (this) {
            counts = new HashMap<>();
            keys = new HashMap<>();
            current = null;
            attempt = -1;
        }
    }

    @Override
    public void add(Object v) {
        throw new UnsupportedOperationException("counted through file(name)");
    }

    @Override
    public void merge(AccumulatorV2<Object, Map<TaskKey, Map<Long, Map<String, FileCounts>>>> other) {
        Map<TaskKey, Map<Long, Map<String, FileCounts>>> more = other.value();
        synchronized (this) {
            if (other instanceof Tally tally) {
                tally.keys.forEach((batch, found) -> keys.computeIfAbsent(batch, b -> new Keys()).merge(found));
            }
            for (Map.Entry<TaskKey, Map<Long, Map<String, FileCounts>>> task : more.entrySet()) {
                Map<Long, Map<String, FileCounts>> attempts = counts.computeIfAbsent(task.getKey(), k -> new HashMap<>());
                for (Map.Entry<Long, Map<String, FileCounts>> run : task.getValue().entrySet()) {
                    Map<String, FileCounts> files = attempts.computeIfAbsent(run.getKey(), a -> new HashMap<>());
                    for (Map.Entry<String, FileCounts> file : run.getValue().entrySet()) {
                        files.computeIfAbsent(file.getKey(), n -> new FileCounts()).merge(file.getValue());
                    }
                }
            }
        }
    }

    @Override
    public Map<TaskKey, Map<Long, Map<String, FileCounts>>> value() {
        return counts;
    }

    /**
     * On the driver, once the batch committed: its counts by file (as Spark names it), one
     * attempt of each task, taken out (the tasks of later batches add meanwhile), as JSON.
     */
    public String takeBatch(long batchId) {
        Map<String, FileCounts> found = new HashMap<>();
        synchronized (this) {
            List<TaskKey> tasks = new ArrayList<>();
            for (TaskKey key : counts.keySet()) {
                if (key.batch() == batchId) {
                    tasks.add(key);
                }
            }
            for (TaskKey key : tasks) {
                Map<Long, Map<String, FileCounts>> attempts = counts.remove(key);
                long first = attempts.keySet().stream().mapToLong(Long::longValue).min().orElseThrow();
                for (Map.Entry<String, FileCounts> file : attempts.get(first).entrySet()) {
                    found.computeIfAbsent(file.getKey(), n -> new FileCounts()).merge(file.getValue());
                }
            }
            Keys batchKeys = keys.remove(batchId);
            if (batchKeys != null) {
                if (runKeys == null) {
                    runKeys = new Keys();
                }
                runKeys.merge(batchKeys);
            }
        }
        return json(found);
    }

    /** On the driver: the distinct keys of every batch taken so far (-1: none had keys). */
    public long distinctKeys() {
        synchronized (this) {
            return runKeys == null ? -1 : runKeys.estimate();
        }
    }

    static String json(Map<String, FileCounts> files) {
        StringWriter text = new StringWriter();
        try (JsonGenerator out = new JsonFactory().createGenerator(text)) {
            out.writeStartObject();
            for (Map.Entry<String, FileCounts> file : files.entrySet()) {
                out.writeFieldName(file.getKey());
                file.getValue().write(out);
            }
            out.writeEndObject();
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return text.toString();
    }
}
