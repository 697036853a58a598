"""Exact row accounting per batch, and the quarantine that comes with it:

    input_rows = used_rows + quarantined_rows + late_rows_dropped + duplicates_dropped

The query counts every row as it reads it (jobs/flow/tally.py): per landed file, its
records, the quarantined ones with their lines, and when each usable one would be late.
Once a batch is committed, its account is that count, with the watermark the checkpoint
says the batch dropped rows against (the pattern's late-row rule: late when `late_at` is
at or before it) and what only Spark knows, from the batch's progress (the pattern's
`spark_counts`: the repeats deduplication dropped, a join's late input rows). No landed
file is read again.

A batch whose counts this run does not hold, or whose counts do not add up to the lines
Spark says it read, is read again: the files the checkpoint says it read, through the same
flow and the same count. That is a batch an interrupted earlier run committed, one whose
progress this run did not see, or one Spark redid without reading it: a run that died
between the file sink's commit of a batch and Spark's leaves a batch the next run redoes,
and the sink, which has its output already, skips it. Its Spark counts are then unknown if
no run recorded them (duplicates None; a join's late rows stay counted as used).

The quarantined records of a batch are written to <quarantine>/batch_id=N/ (file, line
number, the line, reason and detail, and the run that accounted them), replacing whatever
an interrupted earlier attempt wrote there, and only then is the batch's account recorded:
accounting a batch twice gives the same files and the same numbers. The account keeps each
file's counts with its size, modification time, the run and the commit time (the file
ledger, jobs/run/files.py).
"""

from __future__ import annotations

from typing import Any

import msgspec
from pyspark.sql import DataFrame, SparkSession

from jobs.declare import PipelineBase
from jobs.flow.lines import lines_before
from jobs.flow.patterns import pattern_of
from jobs.flow.query import usable_events
from jobs.flow.source import read_lines
from jobs.flow.tally import FileCount, Files, Tally, for_batch
from jobs.lake import fs
from jobs.lake.layout import from_spark, join
from jobs.run.checkpoint import CheckpointLog, ms_to_iso
from jobs.run.ledger import Ledger
from jobs.run.report import BatchAccount, FileAccount


def account_batches(
    spark: SparkSession,
    pipeline: PipelineBase,
    log: CheckpointLog,
    ledger: Ledger,
    quarantine: str,
    batch_ids: list[int],
    run_id: str,
    tally: Tally,
    dimension: DataFrame | None = None,
    store: bool = True,
    seen: dict[int, dict[str, Any]] | None = None,
) -> list[BatchAccount]:
    """Account each committed batch not yet accounted; returns the accounts of `batch_ids`.
    Their quarantined records, and their accounts, name `run_id`, the run that accounted them.
    With `store=False` the accounts are not stored in the ledger: the caller does that.
    `seen`: the metrics of the batches whose progress this run saw (jobs/run/progress.py),
    kept in the ledger first, for a run that stops before it stores their accounts; the
    metrics of the others are read from the ledger."""
    seen = seen or {}
    todo = sorted(set(batch_ids) - ledger.accounted_batches())
    committed_ms = log.commit_times_ms() if todo else {}
    accounts = {}
    for b in todo:
        # Per source, the files the batch read (a stream-stream join reads two: sources/0 and 1).
        listed = [log.source_entries(b, s) for s in range(len(pattern_of(pipeline).sources))]
        counts, metrics = tally.take(b), seen.get(b)
        if metrics is not None and _read_nothing_of(counts, listed, metrics):
            metrics = None  # what Spark counted of the batch in this run is not the batch's
        if metrics is not None:
            ledger.write_metrics(b, metrics)
        else:
            metrics = ledger.read_metrics(b) or {}
        files, missing = counts_that_add_up(counts, listed, metrics.get("lines_read")), set()
        read_again = files is None
        if files is None:
            files, missing = _read_again(spark, pipeline, dimension, tally, b, listed, log.batch_time_ms(b))
        missing |= _uncounted(files, listed)
        account = _account(pipeline, log, b, listed, files, missing, metrics, run_id)
        account.committed_at, account.read_again = ms_to_iso(committed_ms.get(b)), read_again
        _write_quarantine(join(quarantine, f"batch_id={b}"), listed, files, run_id)
        if store:
            ledger.write_account(b, account.model_dump())
        accounts[b] = account
    return [accounts.get(b) or BatchAccount.model_validate(ledger.read_account(b)) for b in batch_ids]


def _by_file(counts: Files) -> Files:
    """The counts by file, named as the product names locations (`from_spark`)."""
    return {from_spark(name): count for name, count in counts.items()}


def counts_that_add_up(counts: Files, listed: list[dict[str, int]], lines_read: list[int] | None) -> Files | None:
    """The counts made of a batch, if they add up: per source, to the lines Spark says the
    batch read, and per file, the records to its lines but the blank ones. None: they do
    not (a task's count is missing), or what Spark read is not known."""
    if lines_read is None or len(lines_read) != len(listed):
        return None
    files = _by_file(counts)
    for entries, read in zip(listed, lines_read, strict=True):
        if sum(files[name].lines for name in map(from_spark, entries) if name in files) != read:
            return None
    if any(count.records != count.lines - count.blank for count in files.values()):
        return None
    return files


def _read_nothing_of(counts: Files, listed: list[dict[str, int]], metrics: dict[str, Any]) -> bool:
    """Whether the query ran the batch without reading a line of its files, which are not
    all empty: its sink skipped the batch, having its output already from a run that died
    between the sink's commit and Spark's. Its files are read again, and what Spark counted
    (none dropped as duplicates or late) is not the batch's."""
    if counts or any(metrics["lines_read"]):
        return False
    return any(fs.size(from_spark(path)) != 0 for entries in listed for path in entries)


def _uncounted(files: Files, listed: list[dict[str, int]]) -> set[str]:
    """The files of the batch no line was counted of: an empty file (its size is added to
    `files`), or one gone before the batch ran (returned: its rows, if any, are unknown)."""
    gone = set()
    for path in (path for entries in listed for path in entries if from_spark(path) not in files):
        size = fs.size(from_spark(path))
        if size is None:
            gone.add(path)
        else:
            files[from_spark(path)] = FileCount(size_bytes=size)
    return gone


def _read_again(
    spark: SparkSession,
    pipeline: PipelineBase,
    dimension: DataFrame | None,
    tally: Tally,
    batch_id: int,
    listed: list[dict[str, int]],
    batch_time_ms: int,
) -> tuple[Files, set[str]]:
    """Count a batch by reading its files again with the same flow, at the batch's own
    time (what decided which events were too far in the future); and the files gone since
    it ran, whose rows can no longer be known."""
    paths = [list(entries) for entries in listed]
    missing: set[str] = set()
    for _ in range(2):  # a count that does not add up is made once more
        try:
            counted = _count(spark, pipeline, dimension, tally, batch_id, paths, batch_time_ms)
        except Exception as error:
            gone = {p for ps in paths for p in ps if not fs.exists(from_spark(p))}
            if not (_names_a_missing_file(error) and gone):
                raise
            missing |= gone
            paths = [[p for p in ps if p not in gone] for ps in paths]
            counted = _count(spark, pipeline, dimension, tally, batch_id, paths, batch_time_ms)
        if counted is not None:
            return counted, missing
    raise RuntimeError(
        f"batch {batch_id}: its rows, read again, did not add up to the lines Spark read; "
        "nothing of it was accounted, and the next run tries again"
    )


def _count(
    spark, pipeline, dimension, tally: Tally, batch_id: int, paths: list[list[str]], batch_time_ms: int
) -> Files | None:
    """Run each source's part of the flow over its files, counting the rows for the batch;
    the counts, if they add up to what Spark read (None: they did not)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    tally.take(batch_id)  # what an unfinished count left behind
    lines_read = []
    for source, files in enumerate(paths):
        read = Observation(f"lines-{batch_id}-{source}")
        if files:
            lines = read_lines(spark, files).observe(read, F.count(F.lit(1)).alias("lines"))
            batch_time = F.timestamp_millis(F.lit(batch_time_ms))
            events = usable_events(pipeline, source, lines, dimension, tally, batch_time)
            with for_batch(spark, batch_id):
                events.write.format("noop").mode("overwrite").save()
        lines_read.append(read.get["lines"] if files else 0)
    return counts_that_add_up(tally.take(batch_id), [dict.fromkeys(files, 0) for files in paths], lines_read)


def _names_a_missing_file(error: Exception) -> bool:
    """Spark could not find a file it was asked to read (when planning, or in a task)."""
    text = str(error)
    return "PATH_NOT_FOUND" in text or "FileNotFoundException" in text


def _account(
    pipeline: PipelineBase,
    log: CheckpointLog,
    batch_id: int,
    listed: list[dict[str, int]],
    files: Files,
    missing: set[str],
    metrics: dict,
    run_id: str,
) -> BatchAccount:
    pattern = pattern_of(pipeline)
    late_ms = log.late_watermark_ms(batch_id)
    present = {path: files[from_spark(path)] for entries in listed for path in entries if path not in missing}
    late = sum(count.late(late_ms) for count in present.values())
    quarantined = sum(len(count.quarantined) for count in present.values())
    records = sum(count.records for count in present.values())
    duplicates: int | None = 0
    if "duplicates_dropped" in pattern.spark_counts:
        duplicates = metrics.get("duplicates_dropped")
    if "late_rows_dropped" in pattern.spark_counts:
        late = metrics.get("late_rows_dropped") or 0
    # What Spark drops itself is counted per batch: per file, the rows it may have come
    # from are unknown, unless it dropped none.
    late_known = not ("late_rows_dropped" in pattern.spark_counts and late)
    per_file = [
        _file_account(path, modified_ms, present[path], late_ms, duplicates == 0 and late_known, late_known)
        if path in present
        else FileAccount(path=path, size_bytes=None, modified_ms=modified_ms, **dict.fromkeys(FileAccount.COUNTS))
        for entries in listed
        for path, modified_ms in entries.items()
    ]
    return BatchAccount(
        batch_id=batch_id,
        late_watermark_ms=late_ms,
        input_files=len(per_file),
        input_rows=records,
        used_rows=records - quarantined - late - (duplicates or 0),
        quarantined_rows=quarantined,
        late_rows_dropped=late,
        duplicates_dropped=duplicates,
        output_rows=_output_rows(log, batch_id),
        run_id=run_id,
        files=per_file,
        missing_files=[from_spark(path) for entries in listed for path in entries if path in missing],
    )


def _file_account(
    path: str, modified_ms: int, count: FileCount, late_ms: int, used_known: bool, late_known: bool
) -> FileAccount:
    """One file's line in the ledger."""
    quarantined, late = len(count.quarantined), count.late(late_ms) if late_known else None
    return FileAccount(
        path=path,
        size_bytes=count.size_bytes,
        modified_ms=modified_ms,
        input_rows=count.records,
        used_rows=count.records - quarantined - (late or 0) if used_known else None,
        quarantined_rows=quarantined,
        late_rows_dropped=late,
    )


def _output_rows(log: CheckpointLog, batch_id: int) -> int | None:
    files = log.sink_files(batch_id)
    return None if files is None else sum(fs.parquet_row_count(path) for path in files)


_RECORD = msgspec.json.Encoder()


def _write_quarantine(folder: str, listed: list[dict[str, int]], files: Files, run_id: str) -> None:
    """The batch's quarantined records, one JSON object a line, in file and line order."""
    records = []
    for path in (path for entries in listed for path in entries):
        count = files.get(from_spark(path))
        before: dict[int, int] = {}  # lines of the blocks before a block, counted once each
        for q in sorted(count.quarantined if count else [], key=lambda q: (q.block_start, q.line_in_block)):
            if q.block_start and q.block_start not in before:
                before[q.block_start] = lines_before(path, q.block_start)
            record = {
                "source_file": path,
                "line_number": q.line_in_block + before.get(q.block_start, 0),
                "line": q.line,
                "reason": q.reason,
                "detail": q.detail,
                "run_id": run_id,
            }
            records.append(_RECORD.encode({k: v for k, v in record.items() if v is not None}))
    fs.remove_tree(folder)
    if records:
        fs.write_bytes(join(folder, "part-00000.json"), b"\n".join(records) + b"\n")
