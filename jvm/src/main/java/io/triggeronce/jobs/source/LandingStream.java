package io.triggeronce.jobs.source;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.hadoop.io.compress.SplittableCompressionCodec;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxBytes;
import org.apache.spark.sql.connector.read.streaming.ReadMaxFiles;
import org.apache.spark.sql.connector.read.streaming.ReportsSourceMetrics;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.streaming.SourceProgress;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The landing source's stream: what each batch takes, and how it is read.
 *
 * <p>A start lists what it is given (a folder or a Hadoop pattern, at any depth, through the
 * product's file systems: regular files only; names starting with '.' or '_' left out, as the
 * product's own listing does) and asks the file log's index (FileLog) which of the listed folders'
 * files were taken: a new name is taken, whatever its modification time; a name taken once is
 * never taken again, rewritten or not (jobs/run/audit.py names those). Under availableNow the
 * listing is made once, at the start; each batch then takes the oldest new files (by
 * modification time) up to its limit: whole files, at least one. A batch's files are written to
 * the log as its entry before Spark plans it, so a batch redone after a crash reads them again.
 *
 * <p>Sized batches (`sizing.cap`): after a run's first batch, the bytes the next takes follow
 * from the state the query held after the last ({@link BatchSizing}), read from the query's last
 * progress; each choice is in the progress's source metrics (`sizing`), for the run report.
 */
public final class LandingStream implements MicroBatchStream, SupportsTriggerAvailableNow, ReportsSourceMetrics {
    private final SparkSession session;
    private final String path;
    private final String description;
    private final Configuration conf;
    private final FileLog log;
    private final int maxFiles;
    private final long maxBytes;
    private final int mostFiles; // of a batch by bytes: the driver keeps entries per file
    private final long sizingCap;
    private final long stateBudget;
    private List<Found> availableNow; // listed once, at the start of an availableNow query
    private long lastInputBytes = -1; // of the last batch this query took
    private final List<BatchSizing.Choice> choices = new ArrayList<>();
    private Broadcast<HadoopConf> broadcastConf;

    /** A new file, as listed. */
    private record Found(String uri, long size, long modified) {}

    LandingStream(SparkSession session, CaseInsensitiveStringMap options, String checkpointLocation) {
        this.session = session;
        this.path = options.get("path");
        if (path == null || path.isEmpty()) {
            throw new IllegalArgumentException("the landing source needs a path");
        }
        this.description = "LandingStream[" + path + "] at " + checkpointLocation;
        this.conf = hadoopConf(session, options);
        this.maxFiles = options.getInt("maxFilesPerTrigger", 0);
        this.maxBytes = options.containsKey("maxBytesPerTrigger")
                ? JavaUtils.byteStringAsBytes(options.get("maxBytesPerTrigger")) : 0;
        this.mostFiles = options.getInt("sizing.maxFiles", 0);
        this.sizingCap = options.getLong("sizing.cap", 0);
        this.stateBudget = options.getLong("sizing.stateBudget", 0);
        this.log = new FileLog(conf, new Path(checkpointLocation), new Path(options.getOrDefault("landing", path)));
        log.open();
    }

    /** The session's Hadoop settings, its SQL settings and the source's options, as Spark's
     * file sources make theirs (a setting made with spark.conf.set reaches the line reader). */
    private static Configuration hadoopConf(SparkSession session, CaseInsensitiveStringMap options) {
        Configuration conf = new Configuration(session.sparkContext().hadoopConfiguration());
        CollectionConverters.asJava(session.conf().getAll()).forEach(conf::set);
        options.asCaseSensitiveMap().forEach((key, value) -> {
            if (!key.equalsIgnoreCase("path")) {
                conf.set(key, value);
            }
        });
        return conf;
    }

    @Override
    public Offset initialOffset() {
        return LogOffset.NONE;
    }

    @Override
    public Offset deserializeOffset(String json) {
        return LogOffset.parse(json);
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
        if (maxFiles > 0) {
            return ReadLimit.maxFiles(maxFiles);
        }
        return maxBytes > 0 ? ReadLimit.maxBytes(maxBytes) : ReadLimit.allAvailable();
    }

    @Override
    public void prepareForTriggerAvailableNow() {
        availableNow = listNew();
    }

    @Override
    public Offset latestOffset() {
        throw new UnsupportedOperationException("latestOffset(start, limit) is the one Spark calls");
    }

    @Override
    public synchronized Offset latestOffset(Offset startOffset, ReadLimit limit) {
        long start = LogOffset.of(startOffset).logOffset;
        long head = log.head();
        if (head > start) {
            return new LogOffset(head); // entries a run wrote and stopped before planning: the next batch's
        }
        List<Found> candidates = availableNow != null ? availableNow : listNew();
        List<Found> taken = take(candidates, limit);
        if (taken.isEmpty()) {
            return start < 0 ? null : new LogOffset(start);
        }
        long id = start + 1;
        List<FileLog.Entry> entries = new ArrayList<>(taken.size());
        long bytes = 0;
        for (Found file : taken) {
            entries.add(new FileLog.Entry(file.uri(), file.modified(), id, file.size()));
            bytes += file.size();
        }
        log.write(id, entries);
        if (availableNow != null) {
            availableNow = new ArrayList<>(availableNow.subList(taken.size(), availableNow.size()));
        }
        lastInputBytes = bytes;
        return new LogOffset(id);
    }

    /** The oldest of `files` a batch takes under `limit`: whole files, the first always; by
     * bytes, at most `sizing.maxFiles` of them. */
    private List<Found> take(List<Found> files, ReadLimit limit) {
        if (files.isEmpty()) {
            return files;
        }
        if (limit instanceof ReadMaxFiles most) {
            return files.subList(0, Math.min(most.maxFiles(), files.size()));
        }
        if (!(limit instanceof ReadMaxBytes most)) {
            return files; // every new file
        }
        long budget = sized(most.maxBytes());
        long bytes = 0;
        int count = 0;
        int fileCap = mostFiles > 0 ? mostFiles : Integer.MAX_VALUE;
        for (Found file : files) {
            if (count > 0 && (bytes + file.size() > budget || count >= fileCap)) {
                break;
            }
            bytes += file.size();
            count++;
        }
        return files.subList(0, count);
    }

    /** The bytes the next batch takes: `floor`, or after a batch of this query, as many as the
     * state it left allows (BatchSizing), each such choice kept for the run report. */
    private long sized(long floor) {
        if (sizingCap <= 0 || lastInputBytes < 0) {
            return floor;
        }
        StreamingQueryProgress last = lastProgress();
        if (last == null) {
            return floor;
        }
        long state = 0;
        for (StateOperatorProgress operator : last.stateOperators()) {
            state += operator.memoryUsedBytes();
        }
        long bytes = BatchSizing.next(floor, sizingCap, stateBudget, state, lastInputBytes);
        choices.add(new BatchSizing.Choice(last.batchId(), bytes, state, lastInputBytes));
        return bytes;
    }

    /** This query's last progress: the active query one of whose sources is this one. */
    private StreamingQueryProgress lastProgress() {
        for (StreamingQuery query : session.streams().active()) {
            StreamingQueryProgress last = query.lastProgress();
            if (last == null) {
                continue;
            }
            for (SourceProgress source : last.sources()) {
                if (description.equals(source.description())) {
                    return last;
                }
            }
        }
        return null;
    }

    /** Every file under `path` not taken yet, oldest first. */
    private List<Found> listNew() {
        List<Found> listed = new ArrayList<>();
        try {
            Path pattern = new Path(path);
            FileSystem fs = pattern.getFileSystem(conf);
            FileStatus[] roots = fs.globStatus(pattern);
            for (FileStatus root : roots == null ? new FileStatus[0] : roots) {
                if (root.isDirectory()) {
                    walk(fs, root.getPath(), listed);
                } else {
                    listed.add(found(root));
                }
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        Set<String> keys = new LinkedHashSet<>();
        for (Found file : listed) {
            keys.add(log.folderKey(file.uri()));
        }
        Map<String, FileLog.Entry> taken = log.taken(keys);
        List<Found> fresh = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (Found file : listed) {
            if (!taken.containsKey(file.uri()) && seen.add(file.uri())) {
                fresh.add(file);
            }
        }
        fresh.sort(Comparator.comparingLong(Found::modified).thenComparing(Found::uri));
        return fresh;
    }

    /** The files under `folder`, a folder at a time, leaving out hidden names ('.' or '_') at
     * any level. By `listStatus`, not `listFiles`: Hadoop's local `listFiles` makes each entry a
     * LocatedFileStatus, which reads the file's owner and permissions by running `ls` once per
     * file where Hadoop has no native library (100,000 small files: minutes). */
    private static void walk(FileSystem fs, Path folder, List<Found> into) throws IOException {
        for (FileStatus entry : fs.listStatus(folder)) {
            String name = entry.getPath().getName();
            if (name.startsWith(".") || name.startsWith("_")) {
                continue;
            }
            if (entry.isDirectory()) {
                walk(fs, entry.getPath(), into);
            } else {
                into.add(found(entry));
            }
        }
    }

    private static Found found(FileStatus file) {
        return new Found(FileLog.canonical(file.getPath()), file.getLen(), file.getModificationTime());
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start, Offset end) {
        long from = LogOffset.of(start).logOffset + 1;
        long to = LogOffset.of(end).logOffset;
        CompressionCodecFactory codecs = new CompressionCodecFactory(conf);
        List<Slices.File> files = new ArrayList<>();
        try {
            for (long id = from; id <= to; id++) {
                for (FileLog.Entry entry : log.entries(id)) {
                    Path file = new Path(java.net.URI.create(entry.path()));
                    long size = entry.size() >= 0 ? entry.size() : file.getFileSystem(conf).getFileStatus(file).getLen();
                    CompressionCodec codec = codecs.getCodec(file);
                    files.add(new Slices.File(entry.path(), size, codec == null || codec instanceof SplittableCompressionCodec));
                }
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        long maxSplit = bytesSetting("spark.sql.files.maxPartitionBytes", "128m");
        long openCost = bytesSetting("spark.sql.files.openCostInBytes", "4m");
        return Slices.tasks(files, maxSplit, openCost, minTasks()).toArray(new InputPartition[0]);
    }

    private long bytesSetting(String key, String otherwise) {
        return JavaUtils.byteStringAsBytes(session.conf().get(key, otherwise));
    }

    /** The fewest tasks a batch is cut into, as Spark's file sources choose it. */
    private int minTasks() {
        for (String key : List.of("spark.sql.files.minPartitionNum", "spark.sql.leafNodeDefaultParallelism")) {
            scala.Option<String> set = session.conf().getOption(key);
            if (set.isDefined()) {
                return Integer.parseInt(set.get());
            }
        }
        return session.sparkContext().defaultParallelism();
    }

    @Override
    public synchronized PartitionReaderFactory createReaderFactory() {
        if (broadcastConf == null) {
            broadcastConf = JavaSparkContext.fromSparkContext(session.sparkContext()).broadcast(new HadoopConf(conf));
        }
        return new LineReading(broadcastConf);
    }

    @Override
    public synchronized Map<String, String> metrics(Optional<Offset> latestConsumedOffset) {
        StringWriter text = new StringWriter();
        try (JsonGenerator out = new JsonFactory().createGenerator(text)) {
            out.writeStartArray();
            for (BatchSizing.Choice choice : choices) {
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
        return Map.of("sizing", text.toString());
    }

    @Override
    public void commit(Offset end) {}

    @Override
    public synchronized void stop() {
        if (broadcastConf != null) {
            broadcastConf.destroy();
        }
    }

    @Override
    public String toString() {
        return description;
    }
}
