"""Following a query's progress (jobs/run/progress.py) with a query that is a fake: each
batch's line and metrics once, idle events left out, and only what is not yet accounted kept."""

from __future__ import annotations

from types import SimpleNamespace

from jobs.flow.patterns import pattern_of
from jobs.run.progress import ProgressWatch


def progress(batch_id: int, lines: int, ran: bool = True) -> SimpleNamespace:
    return SimpleNamespace(
        batchId=batch_id,
        durationMs={"addBatch": 5, "triggerExecution": 9} if ran else {"triggerExecution": 1},
        stateOperators=[],
        sources=[SimpleNamespace(numInputRows=lines)],
        numInputRows=lines,
        processedRowsPerSecond=100.0,
        eventTime={},
    )


def test_each_batch_is_seen_once_and_an_accounted_one_is_forgotten(clickstream):
    query = SimpleNamespace(recentProgress=[progress(0, 3), progress(1, 4)])
    printed = []
    watch = ProgressWatch(query, pattern_of(clickstream), printed.append)
    watch.poll()
    query.recentProgress = [progress(0, 3), progress(1, 4), progress(2, 0, ran=False)]  # batch 2 idles
    watch.poll()
    assert [line.split(":")[0] for line in printed] == ["  batch 0", "  batch 1"]
    assert {b: m["lines_read"] for b, m in watch.metrics.items()} == {0: [3], 1: [4]}

    watch.forget_through(0)  # batch 0 was accounted
    query.recentProgress = [progress(0, 3), progress(1, 4), progress(2, 5)]
    watch.poll()
    assert {b: m["lines_read"] for b, m in watch.metrics.items()} == {1: [4], 2: [5]}
    assert len(printed) == 3  # batch 0, still in Spark's recent progress, is not seen again
