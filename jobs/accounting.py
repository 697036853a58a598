"""Exact row accounting per batch, and the quarantine that comes with it.

Spark's `numRowsDroppedByWatermark` is counted after partial aggregation, so it
undercounts dropped input rows. Instead, once a batch is committed, this module reads
the files the checkpoint says the batch read, applies the same pure parse transform,
and classifies every row against the watermark the checkpoint says the batch ran with:

    input_rows = aggregated_rows + quarantined_rows + late_rows_dropped + duplicates_dropped

Duplicates (pipelines that deduplicate) are the one count only Spark knows: it is taken
from the batch's progress event (`numDroppedDuplicateRows`), which the runner records
as the batch completes. If a run stopped before that, the count is unknown (None) and
the batch's repeats stay counted as aggregated.

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
from jobs.transforms import LINE, SOURCE_FILE, classify_rows, enrich, parse_events, quarantined


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


def account_batches(
    spark: SparkSession, spec: PipelineSpec, log: CheckpointLog, batch_ids: list[int]
) -> list[BatchAccount]:
    """Account each committed batch not yet accounted; returns the accounts of `batch_ids`."""
    todo = sorted(set(batch_ids) - log.accounted_batches())
    files = {b: log.source_files(b) for b in todo}
    late_watermarks = {b: log.late_watermark_ms(b) for b in todo}
    counts: dict[tuple[int, str], int] = {}
    with_files = [b for b in todo if files[b]]
    if with_files:
        batches = [
            read_lines(spark, files[b])
            .withColumn("batch_id", F.lit(b))
            .withColumn("late_watermark", F.timestamp_millis(F.lit(late_watermarks[b])))
            for b in with_files
        ]
        lines = reduce(DataFrame.unionByName, batches)
        parsed = parse_events(lines, spec.source)
        if spec.enrich is not None:
            # Read again, as the query's own batches do: unmatched events are quarantined here.
            parsed = enrich(parsed, read_dimension(spark, spec, log.locations), spec.enrich)
        classified = classify_rows(parsed, spec, "late_watermark").persist()
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
        if spec.deduplicate:
            duplicates = (log.read_metrics(b) or {}).get("duplicates_dropped")
            aggregated -= duplicates or 0
        account = BatchAccount(
            batch_id=b,
            late_watermark_ms=late_watermarks[b],
            input_files=len(files[b]),
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
