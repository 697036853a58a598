"""Output rows -> the table: the streaming write, and reading back only what it committed.

The table is Parquet (the default) or Delta Lake (`output: {format: delta}`):

- Parquet: the file sink lists each batch's files in <output>/_spark_metadata; a batch is
  committed only once that list and the checkpoint's commit are written. Readers that go
  through the sink log (Spark does whenever `_spark_metadata` exists) never see a file of
  a batch that did not commit.
- Delta: each batch is one version of the table's transaction log, <output>/_delta_log
  (jobs/lake/delta.py); every reader of a Delta table reads through it, Spark or not.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import StructType

from jobs.lake import delta, fs
from jobs.lake.layout import join, literal
from jobs.request import Trigger
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
    writer = (
        table.writeStream.queryName(name)
        .format(table_format)
        .outputMode("append")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
    )
    if retention_s and table_format == "parquet":
        writer = writer.option("retention", f"{retention_s}s")
    if partition_by:
        writer = writer.partitionBy(partition_by)
    if trigger.kind == "available-now":
        writer = writer.trigger(availableNow=True)
    elif trigger.kind == "once":
        writer = writer.trigger(once=True)
    else:
        writer = writer.trigger(processingTime=spark_duration(trigger.interval_s))
    return writer.start()


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
