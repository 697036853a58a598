"""Exact row accounting per batch, and the quarantine that comes with it.

Spark's `numRowsDroppedByWatermark` is counted after partial aggregation, so it
undercounts dropped input rows. Instead, once a batch is committed, this module reads
the files the checkpoint says the batch read, applies the same parse (and enrichment)
as the query, and classifies every row against the watermark the checkpoint says the
batch ran with, by the pattern's own late-row rule:

    input_rows = used_rows + quarantined_rows + late_rows_dropped + duplicates_dropped

What only Spark knows (the pattern's `spark_counts`) is taken from the batch's progress
event, which the runner records as the batch completes: the repeats a deduplicating
pipeline dropped, and the input rows a stream-stream join dropped as late. If a run
stopped before the progress was seen, the duplicates are unknown (None) and those rows
stay counted as used; a join's late rows likewise.

The quarantined rows of a batch are written to <quarantine>/batch_id=N/, replacing
whatever an interrupted earlier attempt wrote there, and only then is the batch's
account recorded: accounting a batch twice gives the same files and the same numbers.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.columns import EVENT_TIME, LINE, QUARANTINE_REASON, SOURCE_FILE
from jobs.declare import PipelineBase
from jobs.flow.parse import quarantined
from jobs.flow.patterns import pattern_of
from jobs.flow.query import parsed
from jobs.flow.source import read_lines
from jobs.lake import fs
from jobs.run.checkpoint import CheckpointLog
from jobs.run.ledger import Ledger
from jobs.run.report import BatchAccount


def classified(parsed_rows: DataFrame, pipeline: PipelineBase, late_watermark: str) -> DataFrame:
    """Adds `fate`: quarantined, late (dropped by the watermark in column `late_watermark`,
    by the pattern's rule) or used. Rows deduplication drops as repeats stay "used"
    here: only Spark knows them."""
    late = pattern_of(pipeline).late(F.col(EVENT_TIME), F.col(late_watermark))
    fate = (
        F.when(F.col(QUARANTINE_REASON).isNotNull(), F.lit("quarantined"))
        .when(late, F.lit("late"))
        .otherwise(F.lit("used"))
    )
    return parsed_rows.withColumn("fate", fate)


def _batch_rows(
    spark: SparkSession,
    pipeline: PipelineBase,
    dimension: DataFrame | None,
    source: int,
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
    rows = classified(parsed(pipeline, source, lines, dimension), pipeline, "late_watermark")
    return rows.select("batch_id", "fate", SOURCE_FILE, LINE, QUARANTINE_REASON)


def _output_rows(log: CheckpointLog, batch_id: int) -> int | None:
    files = log.sink_files(batch_id)
    return None if files is None else sum(fs.parquet_row_count(path) for path in files)


def _account_batch(
    spark: SparkSession,
    pipeline: PipelineBase,
    log: CheckpointLog,
    quarantine: str,
    batch_id: int,
    dimension: DataFrame | None,
) -> tuple[dict[str, int], int, int]:
    """Counts by fate of one batch's rows, with its quarantine written; and its files and late watermark.

    One batch at a time, so that accounting a backlog's many batches needs no more memory
    than one; only the quarantined rows keep their raw line in the cached result."""
    pattern = pattern_of(pipeline)
    late_ms = log.late_watermark_ms(batch_id)
    # Per source (a stream-stream join reads two: sources/0 and sources/1).
    files = [log.source_files(batch_id, s) for s in range(len(pattern.sources))]
    parts = [
        _batch_rows(spark, pipeline, dimension, source, paths, batch_id, late_ms)
        for source, paths in enumerate(files)
        if paths
    ]
    counts: dict[str, int] = {}
    if parts:
        rows = reduce(DataFrame.unionByName, parts)
        rows = rows.withColumn(LINE, F.when(F.col("fate") == "quarantined", F.col(LINE))).persist()
        try:
            counts = {row["fate"]: row["count"] for row in rows.groupBy("fate").count().collect()}
            if counts.get("quarantined"):
                (
                    quarantined(rows, "batch_id")
                    .coalesce(1)
                    .write.mode("overwrite")
                    .option("partitionOverwriteMode", "dynamic")
                    .partitionBy("batch_id")
                    .json(quarantine)
                )
        finally:
            rows.unpersist()
    return counts, sum(len(paths) for paths in files), late_ms


def account_batches(
    spark: SparkSession,
    pipeline: PipelineBase,
    log: CheckpointLog,
    ledger: Ledger,
    quarantine: str,
    batch_ids: list[int],
    dimension: DataFrame | None = None,
) -> list[BatchAccount]:
    """Account each committed batch not yet accounted; returns the accounts of `batch_ids`."""
    pattern = pattern_of(pipeline)
    accounts = {}
    for b in sorted(set(batch_ids) - ledger.accounted_batches()):
        counts, input_files, late_ms = _account_batch(spark, pipeline, log, quarantine, b, dimension)
        used, late = counts.get("used", 0), counts.get("late", 0)
        duplicates: int | None = 0
        spark_counted = ledger.read_metrics(b) or {}
        if "duplicates_dropped" in pattern.spark_counts:
            duplicates = spark_counted.get("duplicates_dropped")
            used -= duplicates or 0
        if "late_rows_dropped" in pattern.spark_counts:
            late = spark_counted.get("late_rows_dropped") or 0
            used -= late
        quarantined_rows = counts.get("quarantined", 0)
        account = BatchAccount(
            batch_id=b,
            late_watermark_ms=late_ms,
            input_files=input_files,
            input_rows=used + quarantined_rows + late + (duplicates or 0),
            used_rows=used,
            quarantined_rows=quarantined_rows,
            late_rows_dropped=late,
            duplicates_dropped=duplicates,
            output_rows=_output_rows(log, b),
        )
        ledger.write_account(b, account.model_dump())
        accounts[b] = account
    return [accounts.get(b) or BatchAccount.model_validate(ledger.read_account(b)) for b in batch_ids]
