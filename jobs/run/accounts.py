"""A committed batch's counts -> its account, exactly (pure: no Spark, no storage):

    input_rows = used_rows + quarantined_rows + late_rows_dropped + duplicates_dropped

The counts are what the query counted as it read the batch (jobs/flow/tally.py): per
landed file, its records, the quarantined ones, and when each usable one would be late.
The account adds the watermark the checkpoint says the batch dropped rows against (the
pattern's late-row rule: late when `late_at` is at or before it) and what only Spark knows,
from the batch's progress (the pattern's `spark_counts`: the repeats deduplication
dropped, a join's late input rows). jobs/run/bookkeeper.py decides which counts to use
and when an account is stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jobs.flow.patterns import Pattern
from jobs.flow.tally import FileCount, Files
from jobs.run.report import BatchAccount, FileAccount


def counts_that_add_up(counts: Files, listed: list[dict[str, int]], lines_read: list[int] | None) -> Files | None:
    """The counts made of a batch, if they add up: per source, to the lines Spark says the
    batch read, and per file, the records to its lines but the blank ones. None: they do
    not (a task's count is missing), or what Spark read is not known."""
    if lines_read is None or len(lines_read) != len(listed):
        return None
    for entries, read in zip(listed, lines_read, strict=True):
        if sum(counts[name].lines for name in entries if name in counts) != read:
            return None
    if any(count.records != count.lines - count.blank for count in counts.values()):
        return None
    return counts


@dataclass(frozen=True, kw_only=True)
class BatchRead:
    """What a committed batch read, and what is known of it."""

    batch_id: int
    listed: list[dict[str, int]]  # per source, the files it read -> their modification time when listed
    files: Files  # their counts
    missing: set[str]  # the files gone before anything of them was counted
    metrics: dict[str, Any]  # what Spark counted of the batch (jobs/run/progress.py)
    late_ms: int  # the watermark the batch dropped rows against


def batch_account(pattern: Pattern, read: BatchRead, *, output_rows: int | None, run_id: str) -> BatchAccount:
    """The account of a batch: its rows by fate, in total and per file."""
    present = {path: read.files[path] for entries in read.listed for path in entries if path not in read.missing}
    quarantined = sum(len(count.quarantined) for count in present.values())
    records = sum(count.records for count in present.values())
    late = sum(count.late(read.late_ms) for count in present.values())
    late, duplicates = _dropped_by_spark(pattern, read.metrics, late)
    # What Spark drops itself is counted per batch: per file, the rows it may have come
    # from are unknown, unless it dropped none.
    late_known = not ("late_rows_dropped" in pattern.spark_counts and late)
    used_known = duplicates == 0 and late_known
    per_file = [
        _file_account(path, modified_ms, present[path], read.late_ms, used_known=used_known, late_known=late_known)
        if path in present
        else FileAccount(path=path, size_bytes=None, modified_ms=modified_ms, **dict.fromkeys(FileAccount.COUNTS))
        for entries in read.listed
        for path, modified_ms in entries.items()
    ]
    return BatchAccount(
        batch_id=read.batch_id,
        late_watermark_ms=read.late_ms,
        input_files=len(per_file),
        input_rows=records,
        used_rows=records - quarantined - late - (duplicates or 0),
        quarantined_rows=quarantined,
        late_rows_dropped=late,
        rescued_rows=sum(count.rescued for count in present.values()),
        violations=_violations(present.values()),
        duplicates_dropped=duplicates,
        output_rows=output_rows,
        run_id=run_id,
        files=per_file,
        missing_files=[path for entries in read.listed for path in entries if path in read.missing],
    )


def _dropped_by_spark(pattern: Pattern, metrics: dict[str, Any], late: int) -> tuple[int, int | None]:
    """(late rows, duplicates): Spark's own counts where the pattern has Spark drop them
    (None: the count was never seen), the query's count of late rows otherwise."""
    duplicates: int | None = 0
    if "duplicates_dropped" in pattern.spark_counts:
        duplicates = metrics.get("duplicates_dropped")
    if "late_rows_dropped" in pattern.spark_counts:
        late = metrics.get("late_rows_dropped") or 0
    return late, duplicates


def _file_account(
    path: str, modified_ms: int, count: FileCount, late_ms: int, *, used_known: bool, late_known: bool
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
        rescued_rows=count.rescued,
        violations=dict(count.violations),
    )


def _violations(counts: Iterable[FileCount]) -> dict[str, int]:
    """Rule -> the rows that break it, over the files."""
    return dict(sum((Counter(count.violations) for count in counts), Counter()))
