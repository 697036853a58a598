package io.triggeronce.jobs.source;

import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxBytes;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.streaming.runtime.FileStreamSource;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;

/**
 * Spark's file source, whose batches after the first of a run are sized from the state the
 * query held after the last one (BatchSizing). Everything else is Spark's: the log of files
 * taken, offsets, what a batch reads, trigger availableNow.
 */
public class SizedFileSource extends FileStreamSource {
    private final SparkSession session;
    private final long cap;
    private final long budget;
    private long lastInputBytes = -1; // of the last batch read, -1 until one is

    SizedFileSource(SparkSession session, String path, StructType schema, Seq<String> partitionColumns,
                    String metadataPath, Map<String, String> options, long cap, long budget) {
        super(session, path, "text", schema, partitionColumns, metadataPath, options);
        this.session = session;
        this.cap = cap;
        this.budget = budget;
    }

    @Override
    public Offset latestOffset(Offset startOffset, ReadLimit limit) {
        if (cap <= 0 || !(limit instanceof ReadMaxBytes floor)) {
            return super.latestOffset(startOffset, limit); // a limit the run chose, or none
        }
        String queryId = session.sparkContext().getLocalProperty("sql.streaming.queryId");
        StreamingQuery query = queryId == null ? null : session.streams().get(queryId);
        StreamingQueryProgress last = query == null ? null : query.lastProgress();
        if (last == null || lastInputBytes < 0) {
            return super.latestOffset(startOffset, limit); // the run's first batch measures
        }
        long state = 0;
        for (StateOperatorProgress operator : last.stateOperators()) {
            state += operator.memoryUsedBytes();
        }
        long bytes = BatchSizing.next(floor.maxBytes(), cap, budget, state, lastInputBytes);
        Offset end = super.latestOffset(startOffset, ReadLimit.maxBytes(bytes));
        if (end != null && !end.equals(startOffset)) { // a batch that takes files: the report's
            BatchSizing.record(queryId, new BatchSizing.Choice(last.batchId(), bytes, state, lastInputBytes));
        }
        return end;
    }

    @Override
    public Dataset<Row> getBatch(Option<org.apache.spark.sql.execution.streaming.Offset> start,
                                 org.apache.spark.sql.execution.streaming.Offset end) {
        Dataset<Row> batch = super.getBatch(start, end);
        LogicalPlan plan = batch.logicalPlan();
        if (plan instanceof LogicalRelation relation && relation.relation() instanceof HadoopFsRelation files) {
            lastInputBytes = files.location().sizeInBytes();
        }
        return batch;
    }
}
