"""A running query's progress: a line per batch as it completes, the lines it read, and what
only Spark counts.

The query's own `recentProgress` is read, not a listener's events: it is updated before
the batch's commit returns, so when the query ends every batch it ran is in it.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.listener import StreamingQueryProgress

from jobs.flow.patterns import Pattern
from jobs.flow.source import batch_sizes
from jobs.run.report import shown


def state_rows_of(progress: StreamingQueryProgress) -> int:
    return sum(operator.numRowsTotal for operator in progress.stateOperators)


def spark_counts(progress: StreamingQueryProgress) -> dict[str, int]:
    """What only Spark knows of a batch: repeats dropped by deduplication, and input rows
    a stream-stream join dropped as late (a join does no partial aggregation first, so
    Spark's count is of input rows)."""
    operators = progress.stateOperators
    return {
        "duplicates_dropped": sum((o.customMetrics or {}).get("numDroppedDuplicateRows", 0) for o in operators),
        "late_rows_dropped": sum(o.numRowsDroppedByWatermark for o in operators),
    }


def progress_line(progress: StreamingQueryProgress, pattern: Pattern) -> str:
    rate = progress.processedRowsPerSecond or 0.0
    watermark = (progress.eventTime or {}).get("watermark", "-")
    counted = spark_counts(progress)
    extra = "".join(f", {name.replace('_', ' ')} {counted[name]}" for name in pattern.spark_counts)
    read = "rows" if pattern.pipeline.source.table else "lines"  # a table's, or a landing's
    return (
        f"  batch {progress.batchId}: {progress.numInputRows} {read} read, {rate:.0f} {read}/s, "
        f"watermark {shown(watermark)}, state rows {state_rows_of(progress)}{extra}"
    )


class ProgressWatch:
    """Follows a running query: logs each new batch's progress as it completes, and keeps
    each batch's metrics: the lines each source read (what the query's own count must add up
    to, jobs/accounting/batches.py) and what only Spark counted. A query Spark would run
    without end (`Pattern.stops_itself`) is stopped once a batch of this run read nothing new."""

    def __init__(self, query: StreamingQuery, pattern: Pattern, log: logging.Logger, redone: int | None = None):
        self.query = query
        self.pattern = pattern
        self.log = log
        self.metrics: dict[int, dict[str, Any]] = {}  # of each batch seen and not yet forgotten
        self.last_seen = -1  # batch
        self.last_state_rows: int | None = None
        self.drained = False  # a batch without new rows ran: every file the run may take is read
        self.redone = -1 if redone is None else redone  # the batches up to it were planned by an earlier run
        self.batch_sizes: list[dict[str, int]] = []  # what the landing source chose, as its last progress says

    def poll(self) -> None:
        for progress in self.query.recentProgress:
            # Idle progress events (no batch ran) carry no addBatch duration.
            if progress.batchId <= self.last_seen or "addBatch" not in (progress.durationMs or {}):
                continue
            self.last_seen = progress.batchId
            self.batch_sizes = batch_sizes(progress.sources) or self.batch_sizes
            if progress.stateOperators:
                self.last_state_rows = state_rows_of(progress)
            counted = spark_counts(progress)
            metrics = {name: counted[name] for name in self.pattern.spark_counts}
            self.metrics[progress.batchId] = metrics | {"lines_read": [s.numInputRows for s in progress.sources]}
            news = progress.batchId > self.redone
            self.drained = self.drained or (news and not any(s.numInputRows for s in progress.sources))
            self.log.info("%s", progress_line(progress, self.pattern))
        if self.drained and not self.pattern.stops_itself and self.query.isActive:
            self.log.info("  stop: every file is read, and a batch without new rows has run the timers and TTL")
            self.query.stop()  # the batch in flight, if any, is redone by the next run

    def forget_through(self, batch_id: int) -> None:
        """Drop the metrics of batches up to `batch_id` (accounted: no longer needed)."""
        self.metrics = {b: m for b, m in self.metrics.items() if b > batch_id}
