"""Each batch's rows, counted as the query reads them, so that accounting a batch needs no
second read of its files (jobs/accounting/batches.py).

Spark's Python workers add to one accumulator per run (`Tally`):

    the decoder (decode.py)     per landed file: the lines it read (blank ones too), its size
    `counted` (after parsing)   per landed file: its records, the usable ones with a value
                                rescued (`_rescued_data`), how many broke each declared
                                rule (`_rules_broken`, jobs/flow/rules.py); the quarantined ones, with where
                                they are in the file, the line, the reason and its detail; and
                                for each usable record the time at or before which its pattern
                                drops it as late (`late_at`: the watermark that decides is only
                                known once the batch has run)

A task's counts are kept per (batch, stage, partition) and task attempt, so that a task
Spark ran again (after losing an executor) counts once. The batch is the local property
Spark sets on every job of a micro-batch; reading a batch again sets it too (`for_batch`).
Nothing is written by the workers: the counts travel with the tasks' results to the driver,
which holds a batch's counts (its quarantined lines included) until the batch is accounted.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import AccumulatorParam, TaskContext

from jobs.columns import (
    BLOCK_START,
    BROKEN,
    LINE,
    LINE_NUMBER,
    QUARANTINE_DETAIL,
    QUARANTINE_REASON,
    RESCUED_DATA,
    SOURCE_FILE,
)
from jobs.lake.layout import from_spark

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

BATCH_ID = "streaming.sql.batchId"  # the local property Spark sets for a micro-batch's jobs


@dataclass(slots=True)
class Quarantined:
    """A record that cannot be used, where the decoder read it: the part of the file (its
    first byte) and the line's number in that part (jobs/accounting/lines.py numbers it in the file)."""

    block_start: int
    line_in_block: int
    line: str | None
    reason: str
    detail: str | None


@dataclass(slots=True)
class FileCount:
    """One landed file's rows, as far as some tasks read it."""

    size_bytes: int | None = None
    lines: int = 0  # read by the decoder, blank ones too
    blank: int = 0  # ... of which blank (not records)
    records: int = 0  # counted after parsing: every line but the blank ones
    rescued: int = 0  # ... of which usable with a value rescued (_rescued_data)
    violations: dict[str, int] = field(default_factory=dict)  # rule -> records that break it
    late_at_us: list[np.ndarray] = field(default_factory=list)  # distinct late_at of usable records...
    late_at_counts: list[np.ndarray] = field(default_factory=list)  # ... and how many have each
    quarantined: list[Quarantined] = field(default_factory=list)

    def merge(self, other: FileCount) -> None:
        self.size_bytes = other.size_bytes if self.size_bytes is None else self.size_bytes
        self.lines += other.lines
        self.blank += other.blank
        self.records += other.records
        self.rescued += other.rescued
        for rule, n in other.violations.items():
            self.violations[rule] = self.violations.get(rule, 0) + n
        self.late_at_us += other.late_at_us
        self.late_at_counts += other.late_at_counts
        self.quarantined += other.quarantined

    def late(self, watermark_ms: int) -> int:
        """Usable records at or before `watermark_ms` by their pattern's rule."""
        if not self.late_at_us:
            return 0
        values, counts = np.concatenate(self.late_at_us), np.concatenate(self.late_at_counts)
        return int(counts[values <= watermark_ms * 1000].sum())


Files = dict[str, FileCount]  # landed file -> its counts (in tasks, named as Spark's `_metadata` names it)


def _merge_files(total: Files, more: Files) -> None:
    for file, count in more.items():
        total.setdefault(file, FileCount()).merge(count)


class TaskCounts(AccumulatorParam):
    """(batch, stage, partition) -> task attempt -> Files."""

    def zero(self, value: Any) -> dict:
        return {}

    def addInPlace(self, total: dict, more: dict) -> dict:
        for task, attempts in more.items():
            for attempt, files in attempts.items():
                _merge_files(total.setdefault(task, {}).setdefault(attempt, {}), files)
        return total


class Tally:
    """One run's counts of every batch it read, from the tasks that read them."""

    def __init__(self, spark: SparkSession):
        self._accumulator = spark.sparkContext.accumulator({}, TaskCounts())

    def add(self, files: Files) -> None:
        """In a task: count these rows for the batch the task belongs to."""
        context = TaskContext.get()
        batch = int(context.getLocalProperty(BATCH_ID))
        task = (batch, context.stageId(), context.partitionId())
        self._accumulator.add({task: {context.taskAttemptId(): files}})

    def take(self, batch_id: int) -> Files:
        """On the driver, once the batch committed: its counts, forgotten here, by file as
        the product names it (`from_spark`). Empty when no task of it counted a line."""
        return {from_spark(name): count for name, count in take_batch(self._accumulator.value, batch_id).items()}


def take_batch(counts: dict, batch_id: int) -> Files:
    """A batch's counts, one attempt of each task, taken out of `counts` (which the tasks
    of later batches add to meanwhile)."""
    found: Files = {}
    for task in [t for t in list(counts) if t[0] == batch_id]:
        attempts = counts.pop(task)
        _merge_files(found, attempts[min(attempts)])
    return found


@contextlib.contextmanager
def for_batch(spark: SparkSession, batch_id: int) -> Iterator[None]:
    """Jobs started inside count their rows for `batch_id` (reading a batch again)."""
    context = spark.sparkContext
    context.setLocalProperty(BATCH_ID, str(batch_id))
    try:
        yield
    finally:
        context.setLocalProperty(BATCH_ID, None)


def counted(parsed: DataFrame, tally: Tally, late_at: Column | None, rules: tuple[str, ...] = ()) -> DataFrame:
    """Parsed records -> the usable ones, every record counted in `tally` on its way
    through: only the quarantined ones bring their line. `rules`: the names of the rules
    the records were tested against, in order (their bits in `_rules_broken`)."""
    from pyspark.sql import functions as F

    quarantined = F.col(QUARANTINE_REASON).isNotNull()
    columns = {
        "source_file": F.col(SOURCE_FILE),
        "late_at": F.lit(None).cast("timestamp") if late_at is None else late_at,
        "rescued": F.col(RESCUED_DATA).isNotNull() if RESCUED_DATA in parsed.columns else F.lit(False),
        "broken": F.col(BROKEN) if rules else F.lit(0).cast("long"),
        "reason": F.col(QUARANTINE_REASON),
        # Where a quarantined record is, and what it says: null for the usable ones.
        "block_start": F.when(quarantined, F.col(BLOCK_START)),
        "line_number": F.when(quarantined, F.col(LINE_NUMBER)),
        "line": F.when(quarantined, F.col(LINE)),
        "detail": F.when(quarantined, F.col(QUARANTINE_DETAIL)),
    }
    with warnings.catch_warnings():  # PySpark prefers type hints, which it cannot read from a class
        warnings.simplefilter("ignore", UserWarning)
        count = F.arrow_udf(RowCounter(tally, rules), "boolean", F.ArrowUDFType.SCALAR).asNondeterministic()
    # A column, then a filter on it: as a filter, Spark would push the count below the
    # parse and evaluate each parsed value again for it.
    usable = count(*(columns[name] for name in RowCounter.COLUMNS))
    return parsed.withColumn("_usable", usable).where("_usable").drop("_usable")


@dataclass(frozen=True)
class RowCounter:
    """For `counted`: the columns of an Arrow batch of parsed records, named by COLUMNS ->
    whether each is usable; what the batch holds is added to the tally, per file."""

    tally: Tally
    rules: tuple[str, ...] = ()

    # The columns it is handed, in this order (a scalar UDF is handed them by position).
    COLUMNS: ClassVar[tuple[str, ...]] = (
        "source_file",  # the landed file, as Spark names it
        "late_at",  # the time at or before which the pattern drops the record as late
        "rescued",  # usable with a value rescued
        "broken",  # the bits of the rules it breaks
        "reason",  # why it cannot be used; null: usable
        "block_start",  # where a quarantined record is: its part of the file ...
        "line_number",  # ... its line in that part
        "line",  # ... the line as landed
        "detail",  # ... and the reason's detail
    )

    def __call__(self, *arrays: pa.Array) -> pa.Array:
        named = dict(zip(self.COLUMNS, arrays, strict=True))
        source_file, late_at, rescued, broken, reason = (
            named[name] for name in ("source_file", "late_at", "rescued", "broken", "reason")
        )
        usable = pc.is_null(reason)
        files: Files = {}
        for file, n in _counts(source_file):
            files[file] = FileCount(records=n)
        kept = pc.and_(usable, rescued)
        if pc.any(kept).as_py():
            for file, n in _counts(source_file.filter(kept)):
                files[file].rescued = n
        if self.rules and pc.any(pc.not_equal(broken, 0)).as_py():
            for bit, rule in enumerate(self.rules):
                breaks = pc.not_equal(pc.bit_wise_and(broken, pa.scalar(1 << bit, pa.int64())), 0)
                for file, n in _counts(source_file.filter(breaks)):
                    files[file].violations[rule] = n
        timed = pc.and_(usable, pc.is_valid(late_at))
        if pc.any(timed).as_py():
            grouped = (
                pa.table({"file": source_file.filter(timed), "at": late_at.filter(timed).cast(pa.int64())})
                .group_by(["file", "at"])
                .aggregate([([], "count_all")])
            )
            for file in pc.unique(grouped.column("file")).to_pylist():
                mine = grouped.filter(pc.equal(grouped.column("file"), file))
                files[file].late_at_us.append(mine.column("at").to_numpy())
                files[file].late_at_counts.append(mine.column("count_all").to_numpy())
        bad = pc.invert(usable)
        if pc.any(bad).as_py():
            where = [named[name] for name in ("source_file", "block_start", "line_number", "line", "reason", "detail")]
            for file, start, number, text, why, more in zip(*(c.filter(bad).to_pylist() for c in where), strict=True):
                files[file].quarantined.append(Quarantined(start, number, text, why, more))
        self.tally.add(files)
        return usable


def _counts(values: pa.Array) -> list[tuple[Any, int]]:
    """(value, how many times it occurs)."""
    counts = pc.value_counts(values)
    return list(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True))
