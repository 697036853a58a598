"""Each batch's rows, counted as the query reads them, so that accounting a batch needs no
second read of its files (jobs/accounting/batches.py).

The JVM counts them (io.triggeronce.jobs.tally.Tally, an accumulator of the product's jar,
fed by the SQL functions of jobs/flow/functions.py), as the query reads them:

    the decoder                 per landed file: the lines it read (blank ones too), its size
    `counted` (after parsing)   per landed file: its records, the usable ones with a value
                                rescued (`_rescued_data`), how many broke each declared
                                rule (`_rules_broken`, jobs/flow/rules.py); the quarantined ones, with where
                                they are in the file, the line, the reason and its detail; and
                                for each usable record the time at or before which its pattern
                                drops it as late (`late_at`: the watermark that decides is only
                                known once the batch has run); per batch, the distinct keys of
                                the usable records the `where` keeps (a HyperLogLog sketch)

and a processor's guard (jobs/flow/guard.py), in Spark's Python workers, adds the rows a
processor failed on to a Python accumulator beside it.

A task's counts are kept per (batch, stage, partition) and task attempt, so that a task
Spark ran again (after losing an executor, or a stage run again) counts once: a batch is
taken with one attempt of each task. The batch is the local property Spark sets on every
job of a micro-batch; reading a batch again sets it too (`for_batch`). Nothing is written
by the tasks: the counts travel with their results to the driver, which holds a batch's
counts (its quarantined lines included) until the batch is accounted.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from pyspark import AccumulatorParam, TaskContext

from jobs.columns import (
    BLOCK_START,
    BROKEN,
    INTERNAL,
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
    line_bytes: int = 0  # ... their bytes, line ends not included (jobs/accounting/long_lines.py)
    blank: int = 0  # ... of which blank (not records)
    records: int = 0  # counted after parsing: every line but the blank ones
    rescued: int = 0  # ... of which usable with a value rescued (_rescued_data)
    filtered: int = 0  # ... of which usable, and filtered by the declaration's `where` (never late)
    violations: dict[str, int] = field(default_factory=dict)  # rule -> records that break it
    late_at_us: list[np.ndarray] = field(default_factory=list)  # distinct late_at of usable records...
    late_at_counts: list[np.ndarray] = field(default_factory=list)  # ... and how many have each
    quarantined: list[Quarantined] = field(default_factory=list)

    def merge(self, other: FileCount) -> None:
        self.size_bytes = other.size_bytes if self.size_bytes is None else self.size_bytes
        self.lines += other.lines
        self.line_bytes += other.line_bytes
        self.blank += other.blank
        self.records += other.records
        self.rescued += other.rescued
        self.filtered += other.filtered
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
    """One run's counts of every batch it read, from the tasks that read them: the JVM's,
    and a processor guard's beside them."""

    def __init__(self, spark: SparkSession):
        from jobs.flow.functions import functions

        self.jvm = functions(spark).newTally(spark._jsparkSession)
        self._accumulator = spark.sparkContext.accumulator({}, TaskCounts())

    def __getstate__(self) -> dict:
        return {"jvm": None, "_accumulator": self._accumulator}  # a Python worker adds to the latter only

    def add(self, files: Files) -> None:
        """In a Python worker's task (a processor's guard): count these rows for the batch
        the task belongs to."""
        context = TaskContext.get()
        batch = int(context.getLocalProperty(BATCH_ID))
        task = (batch, context.stageId(), context.partitionId())
        self._accumulator.add({task: {context.taskAttemptId(): files}})

    def take(self, batch_id: int) -> Files:
        """On the driver, once the batch committed: its counts, forgotten here, by file as
        the product names it (`from_spark`). Empty when no task of it counted a line."""
        found = files_of_json(self.jvm.takeBatch(batch_id))
        _merge_files(found, take_batch(self._accumulator.value, batch_id))
        return {from_spark(name): count for name, count in found.items()}

    def distinct_keys(self) -> int | None:
        """The distinct keys of every batch taken so far (an estimate, about 1.6% off: a
        HyperLogLog sketch); None when no batch had keys to count."""
        found = self.jvm.distinctKeys()
        return None if found < 0 else int(found)


def files_of_json(text: str) -> Files:
    """The JVM's counts of a batch (Tally.takeBatch's JSON) as FileCounts."""
    found: Files = {}
    for name, counted in json.loads(text).items():
        late = np.array(counted["late_at"], np.int64).reshape(-1, 2)
        found[name] = FileCount(
            size_bytes=counted["size_bytes"],
            lines=counted["lines"],
            line_bytes=counted.get("line_bytes", 0),
            blank=counted["blank"],
            records=counted["records"],
            rescued=counted["rescued"],
            filtered=counted.get("filtered", 0),
            violations=counted["violations"],
            late_at_us=[late[:, 0]] if len(late) else [],
            late_at_counts=[late[:, 1]] if len(late) else [],
            quarantined=[Quarantined(*q) for q in counted["quarantined"]],
        )
    return found


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


def counted(
    parsed: DataFrame,
    tally: Tally,
    late_at: Column | None,
    rules: tuple[str, ...] = (),
    filtered: Column | None = None,
    transforms: bool = False,
    keys: list[str] | None = None,
) -> DataFrame:
    """Parsed records -> the usable ones, every record counted in `tally` on its way
    through, in the JVM: only the quarantined ones bring their line. `rules`: the names of
    the rules the records were tested against, in order (their bits in `_rules_broken`).
    `filtered`: whether the declaration's `where` filters a record (counted so, never late;
    still usable: the watermark sees it, jobs/flow/expressions.py). `transforms`: the ones it
    keeps go through a transform next, counted as filtered until it gives them back, and late
    as they come out (jobs/flow/transform.py): `late_at` is then None. `keys`: the paths the
    pattern's state is keyed by, whose distinct values over the usable records the `where`
    keeps are counted per batch (a hash of them, into a sketch: Tally.distinct_keys)."""
    from pyspark.sql import functions as F

    from jobs.flow.fields import field
    from jobs.flow.functions import register_count

    quarantined = F.col(QUARANTINE_REASON).isNotNull()
    columns = {
        "source_file": F.col(SOURCE_FILE),
        "late_at": F.lit(None).cast("long") if late_at is None else F.unix_micros(late_at),
        "rescued": F.col(RESCUED_DATA).isNotNull() if RESCUED_DATA in parsed.columns else F.lit(False),
        "broken": F.col(BROKEN) if rules else F.lit(0).cast("long"),
        "reason": F.col(QUARANTINE_REASON),
        # Where a quarantined record is, and what it says: null for the usable ones.
        "where": F.when(
            quarantined,
            F.struct(F.col(BLOCK_START), F.col(LINE_NUMBER), F.col(LINE), F.col(QUARANTINE_DETAIL)),
        ),
        "filtered": F.lit(False) if filtered is None else filtered,
        "key_hash": F.xxhash64(*(field(key) for key in keys)) if keys else F.lit(None).cast("long"),
    }
    count = register_count(parsed.sparkSession, rules, tally.jvm, transforms)
    # A column, then a filter on it: as a filter, Spark would push the count below the
    # parse and evaluate each parsed value again for it.
    usable = F.call_function(count, *(columns[name] for name in COUNTED))
    return parsed.withColumn(USABLE, usable).where(F.col(USABLE)).drop(USABLE)


USABLE = f"{INTERNAL}usable"  # what the counter says of a record: a column, then a filter on it

# What the counter is handed, in this order (a SQL function is handed them by position).
COUNTED = (
    "source_file",
    "late_at",
    "rescued",
    "broken",
    "reason",
    "where",
    "filtered",
    "key_hash",
)
