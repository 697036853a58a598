"""Output rows -> the table: the streaming write, and reading back only what it committed.

The table is Parquet (the default) or Delta Lake (`output: {format: delta}`):

- Parquet: the file sink lists each batch's files in <output>/_spark_metadata; a batch is
  committed only once that list and the checkpoint's commit are written. Readers that go
  through the sink log (Spark does whenever `_spark_metadata` exists) never see a file of
  a batch that did not commit.
- Delta: each batch is one version of the table's transaction log, <output>/_delta_log
  (jobs/lake/delta.py); every reader of a Delta table reads through it, Spark or not. The
  batch is appended by `foreachBatch` (DeltaBatches), its commit saying which query and
  batch it is: a batch Spark runs again after a restart finds its commit and adds nothing.
  (Delta's own streaming sink does the same with a `txn` action, but looks its last one up
  by computing the table's whole state again at every batch: a Spark job and a third more
  time per batch, docs/performance.md.)
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import StructType

from jobs.lake import delta, fs
from jobs.lake.layout import join, literal
from jobs.request import Trigger, TriggerKind
from jobs.units import spark_duration


def start(
    table: DataFrame,
    name: str,
    output: str,
    checkpoint: str,
    trigger: Trigger,
    partition_by: str | None = None,
    retention_s: int | None = None,
    table_format: str = "parquet",
) -> StreamingQuery:
    """Append `table` to the table at `output` (`table_format`: parquet or delta), exactly once
    through `checkpoint`; with `retention_s`, a Parquet sink log drops files written longer
    ago when it compacts (a Delta table keeps its versions until VACUUM)."""
    writer = table.writeStream.queryName(name).outputMode("append").option("checkpointLocation", checkpoint)
    if table_format == "delta":
        writer = writer.foreachBatch(DeltaBatches(output, checkpoint, partition_by))
    else:
        writer = writer.format(table_format).option("path", output)
        if retention_s:
            writer = writer.option("retention", f"{retention_s}s")
        if partition_by:
            writer = writer.partitionBy(partition_by)
    if trigger.kind == TriggerKind.AVAILABLE_NOW:
        writer = writer.trigger(availableNow=True)
    elif trigger.kind == TriggerKind.ONCE:
        writer = writer.trigger(once=True)
    else:
        writer = writer.trigger(processingTime=spark_duration(trigger.interval_s))
    return writer.start()


class DeltaBatches:
    """Each batch of a query appended to the Delta table at `output` in one commit that says
    which batch of which query it is; nothing when the log already has that commit (the
    batch done again after a crash between Delta's commit and the checkpoint's)."""

    def __init__(self, output: str, checkpoint: str, partition_by: str | None):
        self.output, self.checkpoint, self.partition_by = output, checkpoint, partition_by
        self._query_id: str | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        if self._query_id is None:  # the checkpoint's metadata exists once the query started
            self._query_id = fs.read_json(join(self.checkpoint, "metadata"))["id"]
        if delta.batch_version(self.output, self._query_id, batch_id) is not None:
            return
        writer = batch.write.format("delta").mode("append")
        if self.partition_by:
            writer = writer.partitionBy(self.partition_by)
        writer.option("userMetadata", delta.batch_says(self._query_id, batch_id)).save(self.output)


def read_committed(spark: SparkSession, schema: StructType, output: str, files: list[str] | None = None) -> DataFrame:
    """Committed output: the given files of the table, or (files=None) the whole table.

    A streaming table is read through its log, so uncommitted files are left out in both
    cases (the files of a batch are those its log entry names). A table written by a batch
    job, such as a staged backfill, is whole once its `_SUCCESS` marker exists.
    """
    if files is None and delta.is_delta(output):
        return spark.read.format("delta").load(output).select(*schema.fieldNames())
    whole = fs.list_names(join(output, "_spark_metadata")) or fs.exists(join(output, "_SUCCESS"))
    if files is None and whole:
        return spark.read.schema(schema).parquet(literal(output))
    if files:
        return spark.read.schema(schema).option("basePath", output).parquet(*map(literal, files))
    return empty_frame(spark, schema)


def read_table(spark: SparkSession, output: str) -> DataFrame:
    """The whole committed table, Parquet or Delta, with the schema it was written with."""
    if delta.is_delta(output):
        return spark.read.format("delta").load(output)
    return spark.read.parquet(literal(output))


def empty_frame(spark: SparkSession, schema: StructType | str) -> DataFrame:
    """No rows, of `schema`, made in the JVM: `createDataFrame([])` would be a Python RDD,
    and starting Python workers to read nothing is what a pipeline without a processor
    never does (jobs/flow/functions.py)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    struct = _parse_datatype_string(schema) if isinstance(schema, str) else schema
    return spark.range(0).select(*(F.lit(None).cast(f.dataType).alias(f.name) for f in struct.fields))
