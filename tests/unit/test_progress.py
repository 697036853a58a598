"""Following a query's progress (jobs/run/progress.py) with a query that is a fake: each
batch's line and metrics once, idle events left out, and only what is not yet accounted kept."""

from __future__ import annotations

import logging
import uuid
from types import SimpleNamespace

from pyspark.sql.streaming.listener import StreamingQueryProgress

from jobs.flow.patterns import pattern_of
from jobs.run.progress import ProgressWatch


def progress(batch_id: int, lines: int, ran: bool = True) -> StreamingQueryProgress:
    """Spark's own progress type, as a query's `recentProgress` holds it."""
    source = {
        "description": "FileStreamSource[file:/l]",
        "startOffset": None,
        "endOffset": {"logOffset": batch_id},
        "latestOffset": None,
        "numInputRows": lines,
        "inputRowsPerSecond": 0.0,
        "processedRowsPerSecond": 100.0,
    }
    return StreamingQueryProgress.fromJson(
        {
            "id": str(uuid.UUID(int=1)),
            "runId": str(uuid.UUID(int=2)),
            "name": "clickstream",
            "timestamp": "2026-11-24T10:00:00.000Z",
            "batchId": batch_id,
            "batchDuration": 9,
            "durationMs": {"addBatch": 5, "triggerExecution": 9} if ran else {"triggerExecution": 1},
            "eventTime": {},
            "stateOperators": [],
            "sources": [source],
            "sink": {"description": "FileSink[/t]", "numOutputRows": -1},
            "numInputRows": lines,
            "processedRowsPerSecond": 100.0,
        }
    )


def test_each_batch_is_seen_once_and_an_accounted_one_is_forgotten(clickstream, caplog):
    query = SimpleNamespace(recentProgress=[progress(0, 3), progress(1, 4)])
    watch = ProgressWatch(query, pattern_of(clickstream), logging.getLogger("tests.progress"))
    watch.poll()
    query.recentProgress = [progress(0, 3), progress(1, 4), progress(2, 0, ran=False)]  # batch 2 idles
    watch.poll()
    assert [line.split(":")[0] for line in caplog.messages] == ["  batch 0", "  batch 1"]
    assert {b: m["lines_read"] for b, m in watch.metrics.items()} == {0: [3], 1: [4]}

    watch.forget_through(0)  # batch 0 was accounted
    query.recentProgress = [progress(0, 3), progress(1, 4), progress(2, 5)]
    watch.poll()
    assert {b: m["lines_read"] for b, m in watch.metrics.items()} == {1: [4], 2: [5]}
    assert len(caplog.messages) == 3  # batch 0, still in Spark's recent progress, is not seen again
