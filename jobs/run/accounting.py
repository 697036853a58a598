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

Batches are read in groups (GROUP_BATCHES, GROUP_FILES), so that the memory one Spark job
needs is bounded however many batches a run committed. Rows are counted per file, and
the account keeps each file's counts with its size, modification time, the run and the
commit time (the file ledger, jobs/run/files.py). The quarantined rows of a batch are
written to <quarantine>/batch_id=N/ (file, line number, the line, reason, detail and the
run that accounted it), replacing whatever an interrupted earlier attempt wrote there,
and only then is the batch's account recorded: accounting a batch twice gives the same
files and the same numbers.
"""

from __future__ import annotations

from functools import reduce
from typing import NamedTuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.columns import (
    BLOCK_START,
    EVENT_TIME,
    FILE_SIZE,
    LINE,
    LINE_NUMBER,
    QUARANTINE_DETAIL,
    QUARANTINE_REASON,
    SOURCE_FILE,
)
from jobs.declare import PipelineBase
from jobs.flow.parse import quarantined
from jobs.flow.patterns import pattern_of
from jobs.flow.query import parsed
from jobs.flow.source import read_lines
from jobs.lake import fs
from jobs.lake.layout import from_spark
from jobs.run.checkpoint import CheckpointLog, ms_to_iso
from jobs.run.ledger import Ledger
from jobs.run.report import BatchAccount, FileAccount


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
    """One batch's rows of one source, parsed as the query parses them, with their fate;
    where in the file and the line itself only for the quarantined ones."""
    lines = (
        read_lines(spark, paths)
        .withColumn("batch_id", F.lit(batch_id))
        .withColumn("late_watermark", F.timestamp_millis(F.lit(late_ms)))
    )
    rows = classified(parsed(pipeline, source, lines, dimension), pipeline, "late_watermark")
    kept = F.col(QUARANTINE_REASON).isNotNull()
    where = [F.when(kept, F.col(c)).alias(c) for c in (BLOCK_START, LINE_NUMBER, LINE)]
    return rows.select("batch_id", SOURCE_FILE, FILE_SIZE, "fate", *where, QUARANTINE_REASON, QUARANTINE_DETAIL)


def _output_rows(log: CheckpointLog, batch_id: int) -> int | None:
    files = log.sink_files(batch_id)
    return None if files is None else sum(fs.parquet_row_count(path) for path in files)


# Batches accounted by one Spark job: few jobs for a run of many small batches, and a
# bound on what one job counts and plans.
GROUP_BATCHES, GROUP_FILES = 20, 1000
FATES = ("used", "late", "quarantined")


def _groups(batch_ids: list[int], files: dict[int, list[list[str]]]) -> list[list[int]]:
    groups: list[list[int]] = []
    count = 0
    for b in batch_ids:
        size = sum(len(paths) for paths in files[b])
        if not groups or len(groups[-1]) >= GROUP_BATCHES or count + size > GROUP_FILES:
            groups.append([])
            count = 0
        groups[-1].append(b)
        count += size
    return groups


class _Tally(NamedTuple):
    """Rows of one file in one batch, by fate."""

    size_bytes: int
    fates: dict[str, int]


def _tally_files(
    spark: SparkSession,
    pipeline: PipelineBase,
    quarantine: str,
    batches: dict[int, tuple[list[list[str]], int]],
    dimension: DataFrame | None,
    run_id: str,
) -> dict[tuple[int, str], _Tally]:
    """Rows per (batch, file) and fate of some committed batches, their quarantine written.
    Files are named by `file_key`."""
    parts = [
        _batch_rows(spark, pipeline, dimension, source, paths, b, late_ms)
        for b, (files, late_ms) in batches.items()
        for source, paths in enumerate(files)
        if paths
    ]
    if not parts:
        return {}
    # One pass over the input: the rows are kept (only the quarantined ones with their
    # lines: a small cache), counted per file and fate, then the quarantined ones written.
    rows = reduce(DataFrame.unionByName, parts).persist()
    try:
        counts = rows.groupBy("batch_id", SOURCE_FILE, FILE_SIZE, "fate").count().collect()
        (
            quarantined(rows, "batch_id")
            .withColumn("run_id", F.lit(run_id))
            .coalesce(1)  # one file per batch, from the cache (counting read the input in parallel)
            .write.mode("overwrite")
            .option("partitionOverwriteMode", "dynamic")
            .partitionBy("batch_id")
            .json(quarantine)
        )
    finally:
        rows.unpersist()
    tallies: dict[tuple[int, str], _Tally] = {}
    for row in counts:
        tally = tallies.setdefault((row.batch_id, from_spark(row[SOURCE_FILE])), _Tally(row[FILE_SIZE], {}))
        tally.fates[row.fate] = row["count"]
    return tallies


def _tally_batches(
    spark: SparkSession,
    pipeline: PipelineBase,
    quarantine: str,
    files: dict[int, list[list[str]]],
    late_watermarks: dict[int, int],
    dimension: DataFrame | None,
    run_id: str,
) -> tuple[dict[int, dict[str, _Tally]], set[str]]:
    """Batch -> file (as `from_spark` names it) -> its rows, a group of batches at a time;
    and the files gone since their batch ran, whose rows can no longer be known."""
    tallies: dict[int, dict[str, _Tally]] = {b: {} for b in files}
    missing: set[str] = set()
    for group in _groups(sorted(files), files):
        batches = {b: (files[b], late_watermarks[b]) for b in group}
        try:
            found = _tally_files(spark, pipeline, quarantine, batches, dimension, run_id)
        except Exception as error:
            gone = _gone(batches) if _names_a_missing_file(error) else set()
            if not gone:
                raise
            missing |= gone
            present = {
                b: ([[p for p in paths if p not in gone] for paths in fl], ms) for b, (fl, ms) in batches.items()
            }
            found = _tally_files(spark, pipeline, quarantine, present, dimension, run_id)
        for (b, path), tally in found.items():
            tallies[b][path] = tally
    return tallies, missing


def account_batches(
    spark: SparkSession,
    pipeline: PipelineBase,
    log: CheckpointLog,
    ledger: Ledger,
    quarantine: str,
    batch_ids: list[int],
    run_id: str,
    dimension: DataFrame | None = None,
) -> list[BatchAccount]:
    """Account each committed batch not yet accounted; returns the accounts of `batch_ids`.
    Their quarantined records, and their accounts, name `run_id`, the run that accounted them."""
    pattern = pattern_of(pipeline)
    todo = sorted(set(batch_ids) - ledger.accounted_batches())
    # Per batch and source (a stream-stream join reads two: sources/0 and sources/1).
    listed = {b: [log.source_entries(b, s) for s in range(len(pattern.sources))] for b in todo}
    files = {b: [list(entries) for entries in listed[b]] for b in todo}
    late_watermarks = {b: log.late_watermark_ms(b) for b in todo}
    tallies, missing = _tally_batches(spark, pipeline, quarantine, files, late_watermarks, dimension, run_id)
    committed_ms = log.commit_times_ms() if todo else {}

    accounts = {}
    for b in todo:
        used, late, quarantined_rows = (sum(t.fates.get(fate, 0) for t in tallies[b].values()) for fate in FATES)
        spark_counted = ledger.read_metrics(b) or {}
        duplicates: int | None = 0
        if "duplicates_dropped" in pattern.spark_counts:
            duplicates = spark_counted.get("duplicates_dropped")
            used -= duplicates or 0
        if "late_rows_dropped" in pattern.spark_counts:
            late = spark_counted.get("late_rows_dropped") or 0
            used -= late
        # What Spark drops itself is counted per batch: per file, the rows it may have come
        # from are unknown, unless it dropped none.
        late_known = not ("late_rows_dropped" in pattern.spark_counts and late)
        per_file = [
            _file_account(
                path, modified_ms, tallies[b].get(from_spark(path)), duplicates == 0 and late_known, late_known
            )
            if path not in missing
            else FileAccount(path=path, size_bytes=None, modified_ms=modified_ms, **dict.fromkeys(FileAccount.COUNTS))
            for entries in listed[b]
            for path, modified_ms in entries.items()
        ]
        account = BatchAccount(
            batch_id=b,
            late_watermark_ms=late_watermarks[b],
            input_files=len(per_file),
            input_rows=used + quarantined_rows + late + (duplicates or 0),
            used_rows=used,
            quarantined_rows=quarantined_rows,
            late_rows_dropped=late,
            duplicates_dropped=duplicates,
            output_rows=_output_rows(log, b),
            run_id=run_id,
            committed_at=ms_to_iso(committed_ms.get(b)),
            files=per_file,
            missing_files=[from_spark(path) for entries in listed[b] for path in entries if path in missing],
        )
        ledger.write_account(b, account.model_dump())
        accounts[b] = account
    return [accounts.get(b) or BatchAccount.model_validate(ledger.read_account(b)) for b in batch_ids]


def _names_a_missing_file(error: Exception) -> bool:
    """Spark could not find a file it was asked to read (when planning, or in a task)."""
    text = str(error)
    return "PATH_NOT_FOUND" in text or "FileNotFoundException" in text


def _gone(batches: dict[int, tuple[list[list[str]], int]]) -> set[str]:
    """The files of these batches no longer landed (as the source's log names them)."""
    return {p for files, _ in batches.values() for paths in files for p in paths if not fs.exists(from_spark(p))}


def _file_account(path: str, modified_ms: int, tally: _Tally | None, used_known: bool, late_known: bool) -> FileAccount:
    """One file's line in the ledger; a file without lines has no tally."""
    fates = tally.fates if tally else {}
    used, late, quarantined_rows = (fates.get(fate, 0) for fate in FATES)
    return FileAccount(
        path=path,
        size_bytes=tally.size_bytes if tally else fs.size(from_spark(path)),
        modified_ms=modified_ms,
        input_rows=used + late + quarantined_rows,
        used_rows=used if used_known else None,
        quarantined_rows=quarantined_rows,
        late_rows_dropped=late if late_known else None,
    )
