"""Exact row accounting per batch, and the quarantine that comes with it.

Spark's `numRowsDroppedByWatermark` is counted after partial aggregation, so it
undercounts dropped input rows. Instead, once a batch is committed, this module reads
the files the checkpoint says the batch read, applies the same pure parse transform,
and classifies every row against the watermark the checkpoint says the batch ran with:

    input_rows = aggregated_rows + quarantined_rows + late_rows_dropped + duplicates_dropped

Two counts only Spark knows are taken from the batch's progress event, which the runner
records as the batch completes: the repeats a deduplicating pipeline dropped
(`numDroppedDuplicateRows`), and the input rows a stream-stream join dropped as late
(`numRowsDroppedByWatermark`: a join aggregates nothing first, so it counts input rows).
If a run stopped before the progress was seen, the duplicates are unknown (None) and
those rows stay counted as aggregated; a join's late rows likewise.

The quarantined rows of a batch are written to <quarantine>/batch_id=N/, replacing
whatever an interrupted earlier attempt wrote there, and only then is the batch's
account recorded: accounting a batch twice gives the same files and the same numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import storage
from jobs.checkpoint import CheckpointLog
from jobs.dimensions import read_dimension
from jobs.spec import PipelineSpec
from jobs.transforms import LINE, QUARANTINE_REASON, SOURCE_FILE, classify_rows, enrich, parse_events, quarantined


@dataclass(frozen=True)
class BatchAccount:
    batch_id: int
    late_watermark_ms: int
    input_files: int
    input_rows: int
    aggregated_rows: int
    quarantined_rows: int
    late_rows_dropped: int
    output_rows: int | None
    duplicates_dropped: int | None = 0


def read_lines(spark: SparkSession, paths: list[str]) -> DataFrame:
    """Landed files as (line, source_file) rows, batch or streaming alike downstream."""
    return (
        spark.read.format("text")
        .load(paths)
        .select(F.col("value").alias(LINE), F.col("_metadata.file_path").alias(SOURCE_FILE))
    )


def _output_rows(log: CheckpointLog, batch_id: int) -> int | None:
    files = log.sink_files(batch_id)
    if files is None:
        return None
    return sum(storage.parquet_row_count(path) for path in files)


def _classified(
    spark: SparkSession,
    spec: PipelineSpec,
    dimension: DataFrame | None,
    index: int,
    paths: list[str],
    batch_id: int,
    late_ms: int,
) -> DataFrame:
    """One batch's rows of one source, parsed as the query parses them, with their fate."""
    lines = (
        read_lines(spark, paths)
        .withColumn("batch_id", F.lit(batch_id))
        .withColumn("late_watermark", F.timestamp_millis(F.lit(late_ms)))
    )
    parsed = parse_events(lines, spec.sources[index])
    if dimension is not None:  # unmatched events are quarantined here, as in the query
        parsed = enrich(parsed, dimension, spec.enrich)
    classified = classify_rows(parsed, spec, "late_watermark")
    return classified.select("batch_id", "fate", SOURCE_FILE, LINE, QUARANTINE_REASON)


def account_batches(
    spark: SparkSession, spec: PipelineSpec, log: CheckpointLog, batch_ids: list[int]
) -> list[BatchAccount]:
    """Account each committed batch not yet accounted; returns the accounts of `batch_ids`."""
    todo = sorted(set(batch_ids) - log.accounted_batches())
    # Per batch and source (a stream-stream join reads two: sources/0 and sources/1).
    files = {(b, i): log.source_files(b, i) for b in todo for i in range(len(spec.sources))}
    late_watermarks = {b: log.late_watermark_ms(b) for b in todo}
    counts: dict[tuple[int, str], int] = {}
    # Read once, now, as the query's own batches read it again each batch.
    dimension = read_dimension(spark, spec, log.locations) if any(files.values()) else None
    classified_parts = [
        _classified(spark, spec, dimension, index, paths, b, late_watermarks[b])
        for (b, index), paths in files.items()
        if paths
    ]
    if classified_parts:
        classified = reduce(DataFrame.unionByName, classified_parts).persist()
        try:
            for row in classified.groupBy("batch_id", "fate").count().collect():
                counts[(row["batch_id"], row["fate"])] = row["count"]
            if any(fate == "quarantined" for _, fate in counts):
                (
                    quarantined(classified, "batch_id")
                    .coalesce(1)
                    .write.mode("overwrite")
                    .option("partitionOverwriteMode", "dynamic")
                    .partitionBy("batch_id")
                    .json(log.locations.quarantine)
                )
        finally:
            classified.unpersist()

    accounts = {}
    for b in todo:
        aggregated = counts.get((b, "aggregated"), 0)
        quarantined_rows = counts.get((b, "quarantined"), 0)
        late = counts.get((b, "late"), 0)
        duplicates = 0
        spark_counted = log.read_metrics(b) or {}
        if "duplicates_dropped" in spec.spark_counts:
            duplicates = spark_counted.get("duplicates_dropped")
            aggregated -= duplicates or 0
        if "late_rows_dropped" in spec.spark_counts:
            late = spark_counted.get("late_rows_dropped") or 0
            aggregated -= late
        account = BatchAccount(
            batch_id=b,
            late_watermark_ms=late_watermarks[b],
            input_files=sum(len(paths) for (batch, _), paths in files.items() if batch == b),
            input_rows=aggregated + quarantined_rows + late + (duplicates or 0),
            aggregated_rows=aggregated,
            quarantined_rows=quarantined_rows,
            late_rows_dropped=late,
            duplicates_dropped=duplicates,
            output_rows=_output_rows(log, b),
        )
        log.write_account(b, asdict(account))
        accounts[b] = account
    return [accounts[b] if b in accounts else BatchAccount(**log.read_account(b)) for b in batch_ids]
