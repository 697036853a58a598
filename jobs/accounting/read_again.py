"""Counting a committed batch again, by reading its files again through the same flow.

For a batch whose counts the run does not hold, or whose counts do not add up to the
lines Spark says it read (jobs/accounting/batches.py): a batch an interrupted earlier run
committed, one whose progress this run did not see, or one Spark redid without reading it.
"""

from __future__ import annotations

from jobs.accounting.accounts import counts_that_add_up
from jobs.accounting.run_view import RunView
from jobs.flow.conditions import spark_conditions
from jobs.flow.query import usable_events
from jobs.flow.source import read_lines, read_table
from jobs.flow.tally import Files, for_batch
from jobs.lake import fs

# Spark could not find a file it was asked to read: when planning, or in a task.
_MISSING_FILE = {"PATH_NOT_FOUND", "FAILED_READ_FILE.FILE_NOT_EXIST"}


def read_again(run: RunView, batch_id: int, listed: list[dict[str, int]]) -> tuple[Files, set[str]]:
    """Count a batch by reading its files again with the same flow, at the batch's own
    time (what decided which events were too far in the future); and the files gone since
    it ran, whose rows can no longer be known."""
    paths = [list(entries) for entries in listed]
    missing: set[str] = set()
    batch_time_ms = run.checkpoint_log.batch_time_ms(batch_id)
    for _ in range(2):  # a count that does not add up is made once more
        try:
            counted = _count(run, batch_id, paths, batch_time_ms)
        except Exception as error:
            gone = {path for source in paths for path in source if not fs.exists(path)}
            if not (gone and _MISSING_FILE & {c.name for c in spark_conditions(error)}):
                raise
            missing |= gone
            paths = [[path for path in source if path not in gone] for source in paths]
            counted = _count(run, batch_id, paths, batch_time_ms)
        if counted is not None:
            return counted, missing
    raise RuntimeError(
        f"batch {batch_id}: its rows, read again, did not add up to the lines Spark read; "
        "nothing of it was accounted, and the next run tries again"
    )


def _count(run: RunView, batch_id: int, paths: list[list[str]], batch_time_ms: int) -> Files | None:
    """Run each source's part of the flow over its files, counting the rows for the batch;
    the counts, if they add up to what Spark read (None: they did not)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    run.tally.take(batch_id)  # what an unfinished count left behind
    lines_read = []
    for source, files in enumerate(paths):
        read = Observation(f"lines-{batch_id}-{source}")
        if files:
            lines = _read(run, source, files).observe(read, F.count(F.lit(1)).alias("lines"))
            batch_time = F.timestamp_millis(F.lit(batch_time_ms))
            events = usable_events(run.pipeline, source, lines, run.dimension, run.tally, batch_time)
            with for_batch(run.spark, batch_id):
                events.write.format("noop").mode("overwrite").save()
        lines_read.append(read.get["lines"] if files else 0)
    return counts_that_add_up(run.tally.take(batch_id), [dict.fromkeys(files, 0) for files in paths], lines_read)


def _read(run: RunView, index: int, files: list[str]):
    """Source `index`'s lines from these files: landed lines, or a table's rows as lines."""
    source = run.pipeline.sources[index]
    if source.table is None:
        return read_lines(run.spark, files)
    return read_table(run.spark, run.locations.landing, source, files)
