package io.triggeronce.jobs.source;

import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The product's streaming source of landed lines, on Spark's DataSource V2 API
 * (`spark.readStream.format("io.triggeronce.jobs.source.LandingSource")`): every line of every
 * file under `path` (a folder or a Hadoop pattern), each with its file (LandingStream says how
 * files are taken, once each). Options: `landing` (the folder `path` lies in, which the file
 * log's index is kept by; `path` when left out), `maxFilesPerTrigger` or `maxBytesPerTrigger`
 * (with `sizing.maxFiles`, the most files a batch by bytes takes), `sizing.cap` and
 * `sizing.stateBudget` (batches after a run's first sized by the state the query keeps:
 * jobs/flow/admission.py), and Hadoop settings for the files (`fs.file.impl`).
 */
public final class LandingSource implements TableProvider {
    /** A line, the file it is in (a %-encoded URI), the first byte of the part of the file
     * read (a large file is read in parts, each numbering its lines) and the file's size. */
    public static final StructType SCHEMA = new StructType()
            .add("value", DataTypes.StringType, false)
            .add("file_path", DataTypes.StringType, false)
            .add("file_block_start", DataTypes.LongType, false)
            .add("file_size", DataTypes.LongType, false);

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return SCHEMA;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        // The session the query was made in (this is called as it is loaded): the query's own,
        // cloned when it starts, has none of its queries (LandingStream reads its progress).
        return new Landing(properties.getOrDefault("path", ""), SparkSession.active());
    }

    private record Landing(String path, SparkSession session) implements SupportsRead {
        @Override
        public String name() {
            return "landing " + path;
        }

        @Override
        @SuppressWarnings("deprecation")
        public StructType schema() {
            return SCHEMA;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return Set.of(TableCapability.MICRO_BATCH_READ);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            return () -> new Scan() {
                @Override
                public StructType readSchema() {
                    return SCHEMA;
                }

                @Override
                public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
                    return new LandingStream(session, options, checkpointLocation);
                }
            };
        }
    }
}
