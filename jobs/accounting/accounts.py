"""A committed batch's counts -> its account, exactly (pure: no Spark, no storage):

    input_rows = used_rows + quarantined_rows + filtered_rows + late_rows_dropped + duplicates_dropped

The counts are what the query counted as it read the batch (jobs/flow/tally.py): per
landed file, its records, the quarantined ones, and when each usable one would be late.
The account adds the watermark the checkpoint says the batch dropped rows against (the
pattern's late-row rule: late when `late_at` is at or before it) and what only Spark knows,
from the batch's progress (the pattern's `spark_counts`: the repeats deduplication
dropped, a join's late input rows). jobs/accounting/batches.py decides which counts to use
and when an account is stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from jobs.flow.patterns import Pattern
from jobs.flow.tally import FileCount, Files


def from_version_1(raw: Any) -> Any:
    if isinstance(raw, dict) and "aggregated_rows" in raw and "used_rows" not in raw:
        raw = {key: value for key, value in raw.items() if key != "aggregated_rows"} | {
            "used_rows": raw["aggregated_rows"]
        }
    return raw


class FileAccount(BaseModel):
    """One landed file's rows in the batch that read it (jobs/accounting/batches.py).

    `used_rows` and `late_rows_dropped` are None where Spark counted part of them for the
    whole batch only: the repeats a deduplicating pipeline dropped, a join's late rows."""

    COUNTS: ClassVar[tuple[str, ...]] = (
        "input_rows",
        "used_rows",
        "quarantined_rows",
        "filtered_rows",
        "late_rows_dropped",
    )

    path: str
    size_bytes: int | None  # None: the file was gone when the batch was accounted
    modified_ms: int | None  # as the source listed it
    input_rows: int | None  # None (and every count): gone before the batch was accounted
    used_rows: int | None
    quarantined_rows: int | None
    late_rows_dropped: int | None
    filtered_rows: int | None = 0  # usable, but not what the declaration's `where` keeps
    rescued_rows: int | None = 0  # of the used or late ones, those with a value rescued (_rescued_data)
    violations: dict[str, int] = Field(default_factory=dict)  # rule -> its rows that break it (none: not listed)


class BatchAccount(BaseModel):
    """One committed batch's rows, exactly (jobs/accounting/batches.py)."""

    batch_id: int
    late_watermark_ms: int
    input_files: int
    input_rows: int
    used_rows: int
    quarantined_rows: int
    late_rows_dropped: int
    output_rows: int | None  # None: the sink log no longer lists the batch's files
    output_nulls: dict[str, int] | None = None  # top-level column -> null values written (None: not known)
    filtered_rows: int = 0  # usable, but not what the declaration's `where` keeps
    rescued_rows: int = 0  # usable rows with a value rescued into _rescued_data (not a fate: part of the above)
    violations: dict[str, int] = Field(default_factory=dict)  # rule -> rows that break it (not a fate either)
    # Reason -> the rows quarantined for it: what the report shows, counted as they were set
    # aside (None in accounts written before it existed).
    quarantine_reasons: dict[str, int] | None = None
    duplicates_dropped: int | None = 0  # None: the run stopped before Spark's count was seen
    # The file ledger (`python -m jobs files`); None in accounts written before it existed.
    run_id: str | None = None  # the run that accounted the batch (and reports it)
    # Landed files gone before the batch was accounted: their rows are in no count.
    missing_files: list[str] = Field(default_factory=list)
    committed_at: str | None = None
    files: list[FileAccount] | None = None
    # Its files were read again to account it: the query's own count was not at hand
    # (an interrupted run committed it), or did not add up (jobs/accounting/batches.py).
    read_again: bool = False

    _upgrade = model_validator(mode="before")(from_version_1)


def tied_files(accounts: list[BatchAccount]) -> list[str]:
    """Files of these batches whose modification time another batch's file has too. Spark's
    file source orders files by modification time alone (to the ms; on S3, to the second),
    so which of them went first, and so which rows were late, was its choice."""
    batches_at: dict[int, set[int]] = {}
    for account in accounts:
        for f in account.files or []:
            if f.modified_ms is not None:
                batches_at.setdefault(f.modified_ms, set()).add(account.batch_id)
    tied = {ms for ms, batches in batches_at.items() if len(batches) > 1}
    return [f.path for a in accounts for f in a.files or [] if f.modified_ms in tied]


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


def batch_account(
    pattern: Pattern,
    read: BatchRead,
    *,
    output_rows: int | None,
    run_id: str,
    output_nulls: dict[str, int] | None = None,
) -> BatchAccount:
    """The account of a batch: its rows by fate, in total and per file."""
    present = {path: read.files[path] for entries in read.listed for path in entries if path not in read.missing}
    quarantined = sum(len(count.quarantined) for count in present.values())
    filtered = sum(count.filtered for count in present.values())
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
        used_rows=records - quarantined - filtered - late - (duplicates or 0),
        quarantined_rows=quarantined,
        filtered_rows=filtered,
        late_rows_dropped=late,
        rescued_rows=sum(count.rescued for count in present.values()),
        violations=_violations(present.values()),
        quarantine_reasons=dict(Counter(q.reason for count in present.values() for q in count.quarantined)),
        duplicates_dropped=duplicates,
        output_rows=output_rows,
        output_nulls=output_nulls,
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
        used_rows=count.records - quarantined - count.filtered - (late or 0) if used_known else None,
        quarantined_rows=quarantined,
        filtered_rows=count.filtered,
        late_rows_dropped=late,
        rescued_rows=count.rescued,
        violations=dict(count.violations),
    )


def _violations(counts: Iterable[FileCount]) -> dict[str, int]:
    """Rule -> the rows that break it, over the files."""
    return dict(sum((Counter(count.violations) for count in counts), Counter()))
