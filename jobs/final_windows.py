"""The last windows of a closed range, and the staged result of a backfill.

In append mode a window is written once the watermark passes its end, and the
watermark only moves when later events arrive. An open-ended stream is right to hold
its last windows: more events may still come for them. A backfill's range is closed:
nothing more will arrive, so the windows still held in state are final. They are read
from the checkpoint's state store with Spark's state data source, their aggregation
buffers finalized, and staged together with the windows the run wrote:

    staged result = windows the sink committed  +  windows still held in state

Aggregation buffers, in the order of the declared aggregates (checked against the
state's schema, so a Spark change that moves them fails loudly rather than silently):
    count -> [count]   sum -> [sum]   min -> [min]   max -> [max]   avg -> [sum, count]
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from jobs import storage
from jobs.backfill import SUMMARY, BackfillError
from jobs.checkpoint import CheckpointLog
from jobs.quality import output_schema, read_committed
from jobs.report import load_reports
from jobs.spec import PipelineSpec
from jobs.storage import Locations, join

BUFFER_FIELDS = {"count": 1, "sum": 1, "min": 1, "max": 1, "avg": 2}


def held_windows(spark: SparkSession, spec: PipelineSpec, locations: Locations) -> DataFrame:
    """The windows still in the checkpoint's state, finalized into output rows."""
    schema = output_schema(spark, spec, locations)
    if not CheckpointLog(locations).committed_batches():
        return spark.createDataFrame([], schema)
    state = spark.read.format("statestore").option("operatorId", spec.aggregation_operator).load(locations.checkpoint)
    buffers = state.schema["value"].dataType.fieldNames()
    expected = sum(BUFFER_FIELDS[a.function] for a in spec.aggregates)
    if len(buffers) != expected:
        raise BackfillError(
            f"the state of {locations.checkpoint} holds {len(buffers)} aggregation buffers {buffers}, "
            f"not the {expected} that {[a.function for a in spec.aggregates]} need; this Spark version "
            "lays out aggregation state differently, so the last windows cannot be read"
        )
    # Buffer fields can share names (avg's sum and count beside sum and count): rename them
    # by position with a struct-to-struct cast, then read them by the new names.
    renamed = StructType(
        [StructField(f"_buffer{i}", f.dataType, f.nullable) for i, f in enumerate(state.schema["value"].dataType)]
    )
    flat = state.select(
        F.col("key.window.start").alias("window_start"),
        F.col("key.window.end").alias("window_end"),
        *(F.col(f"key.{key}").alias(key) for key in spec.keys),
        F.col("value").cast(renamed).alias("buffers"),
    ).select("window_start", "window_end", *spec.keys, "buffers.*")
    values, position = [], 0
    for aggregate in spec.aggregates:
        value = F.col(f"_buffer{position}")
        if aggregate.function == "avg":  # sum / count; no rows counted gives null, as avg does
            value = F.try_divide(value, F.col(f"_buffer{position + 1}"))
        values.append(value.cast(schema[aggregate.name].dataType).alias(aggregate.name))
        position += BUFFER_FIELDS[aggregate.function]
    table = flat.select("window_start", "window_end", *spec.keys, *values)
    if spec.output.partition_by == "window_date":
        table = table.withColumn("window_date", F.to_date("window_start"))
    return table.select(*schema.fieldNames())


def stage_closed_range(spark: SparkSession, spec: PipelineSpec, locations: Locations, stage: str) -> dict[str, Any]:
    """Write every window of the range to `stage` (plain Parquet, replaced whole, _SUCCESS
    last) with a summary beside it; returns the summary."""
    emitted = read_committed(spark, spec, locations, None).drop("window_length_s")
    held = held_windows(spark, spec, locations).cache()
    try:
        writer = emitted.unionByName(held).write.mode("overwrite").option("partitionOverwriteMode", "static")
        if spec.output.partition_by:
            writer = writer.partitionBy(spec.output.partition_by)
        writer.parquet(stage)
        held_rows = held.count()
    finally:
        held.unpersist()
    staged = spark.read.parquet(stage)
    iso = "yyyy-MM-dd'T'HH:mm:ss'Z'"  # the session's zone is UTC
    bounds = staged.agg(
        F.count(F.lit(1)), F.date_format(F.min("window_start"), iso), F.date_format(F.max("window_end"), iso)
    ).first()
    reports = load_reports(locations)
    summary = {
        "pipeline": spec.name,
        "rows": bounds[0],
        "emitted_rows": bounds[0] - held_rows,
        "held_rows": held_rows,
        "first_window": bounds[1],
        "last_window": bounds[2],
        **{
            key: sum(r[key] for r in reports)
            for key in ("input_files", "input_rows", "aggregated_rows", "quarantined_rows", "late_rows_dropped")
        },
        "runs": [r["run_id"] for r in reports],
    }
    storage.write_json(join(stage, SUMMARY), summary)
    return summary
