package io.triggeronce.jobs.source;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.input.LineRecordReader;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A task's lines: each slice of its files read by Hadoop's line reader, as Spark's text source
 * reads them (a slice's first partial line is the slice before's; a line longer than
 * mapreduce.input.linerecordreader.line.maxlength is passed over, which
 * jobs/accounting/long_lines.py counts), each line with its file, the slice's first byte and
 * the file's size (LandingSource.SCHEMA). A file gone by then gives no lines (as Spark's own
 * file source passes it over); the accounting names it.
 */
final class LineReading implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    private final Broadcast<HadoopConf> conf;

    LineReading(Broadcast<HadoopConf> conf) {
        this.conf = conf;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return new Lines((Slices.Task) partition, conf.value());
    }

    private static final class Lines implements PartitionReader<InternalRow> {
        private final Slices.Task task;
        // One per task, not per slice: making one copies the whole configuration, under its
        // lock, which the task's other slices and the other tasks' would wait for.
        private final TaskAttemptContextImpl context;
        private final GenericInternalRow row = new GenericInternalRow(4);
        private int next; // the next slice to open
        private LineRecordReader reader;

        Lines(Slices.Task task, HadoopConf conf) {
            this.task = task;
            this.context = new TaskAttemptContextImpl(conf.get(), new TaskAttemptID());
        }

        @Override
        public boolean next() throws IOException {
            while (true) {
                if (reader != null && reader.nextKeyValue()) {
                    Text line = reader.getCurrentValue();
                    row.update(0, UTF8String.fromBytes(line.getBytes(), 0, line.getLength()));
                    return true;
                }
                if (reader != null) {
                    reader.close();
                    reader = null;
                }
                if (next >= task.slices().size()) {
                    return false;
                }
                try {
                    open(task.slices().get(next++));
                } catch (FileNotFoundException gone) {
                    // Removed after its batch was planned (retention, a producer's clean-up): the
                    // accounting names it (missing_files); a batch redone must not fail for it.
                    reader = null;
                }
            }
        }

        private void open(Slices.Slice slice) throws IOException {
            Path path = new Path(URI.create(slice.uri()));
            reader = new LineRecordReader();
            reader.initialize(new FileSplit(path, slice.start(), slice.length(), new String[0]), context);
            row.update(1, UTF8String.fromString(slice.uri()));
            row.update(2, slice.start());
            row.update(3, slice.fileSize());
        }

        @Override
        public InternalRow get() {
            return row;
        }

        @Override
        public void close() {
            if (reader != null) {
                try {
                    reader.close();
                } catch (IOException error) {
                    throw new UncheckedIOException(error);
                }
            }
        }
    }
}
