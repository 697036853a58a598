"""Counting rows as the query reads them (jobs/flow/tally.py: the JVM's counts read back, a
processor guard's beside them), and taking a batch's count for its account
(jobs/accounting/batches.py): pure functions on hand-made input."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from jobs.accounting.accounts import counts_that_add_up
from jobs.flow.tally import FileCount, Quarantined, TaskCounts, files_of_json, take_batch
from jobs.lake.layout import from_spark


def at(minute: int) -> datetime:
    return datetime(2023, 7, 30, 10, minute, tzinfo=UTC)


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def test_the_jvm_s_count_of_a_batch_reads_back_as_file_counts():
    """What the JVM's tally hands over (io.triggeronce.jobs.tally.Tally.takeBatch; its own
    unit tests count rows and keep one attempt of each task)."""
    text = json.dumps(
        {
            "file:/l/a.json": {
                "size_bytes": 40,
                "lines": 4,
                "blank": 1,
                "records": 3,
                "rescued": 1,
                "violations": {"known_event": 2},
                "late_at": [[ms(at(1)) * 1000, 2], [ms(at(2)) * 1000, 1]],
                "quarantined": [[0, 3, "{x", "malformed_json", "JSON is malformed"]],
            }
        }
    )
    ((name, count),) = files_of_json(text).items()
    assert name == "file:/l/a.json" and from_spark(name) == "/l/a.json"
    assert (count.size_bytes, count.lines, count.blank, count.records, count.rescued) == (40, 4, 1, 3, 1)
    assert count.violations == {"known_event": 2}
    assert count.quarantined == [Quarantined(0, 3, "{x", "malformed_json", "JSON is malformed")]
    assert [count.late(ms(at(m))) for m in (0, 1, 2)] == [0, 2, 3]  # at or before the watermark


def test_a_task_spark_ran_twice_counts_once_and_later_batches_stay():
    counts, param = {}, TaskCounts()
    updates = [
        {(7, 1, 0): {11: {"a.json": FileCount(lines=3, records=3)}}},  # batch 7, stage 1, partition 0
        {(7, 1, 0): {12: {"a.json": FileCount(lines=3, records=3)}}},  # ... run again (a lost executor)
        {(7, 1, 1): {13: {"a.json": FileCount(lines=2, records=1)}}},  # another part of the file
        {(8, 1, 0): {14: {"b.json": FileCount(lines=1, records=1)}}},  # the next batch
    ]
    for update in updates:
        param.addInPlace(counts, update)

    taken = take_batch(counts, 7)

    assert (taken["a.json"].lines, taken["a.json"].records) == (5, 4)
    assert list(counts) == [(8, 1, 0)]


def test_a_count_is_used_only_when_it_adds_up_to_the_lines_spark_read():
    def counts(records_of_a: int = 2) -> dict:
        return {
            "/l/a.json": FileCount(lines=3, blank=1, records=records_of_a),
            "/l/b.json": FileCount(lines=2, records=2),
        }

    # Spark names a file 'file:/l/a.json' in a task and 'file:///l/a.json' in the source's
    # log: both are named as the product names it where Spark hands them over.
    assert from_spark("file:/l/a.json") == from_spark("file:///l/a.json") == "/l/a.json"
    listed = [{"/l/a.json": 1, "/l/b.json": 2}]
    assert counts_that_add_up(counts(), listed, [5]) is not None
    assert counts_that_add_up(counts(), listed, [6]) is None  # a task's count is missing
    assert counts_that_add_up(counts(records_of_a=1), listed, [5]) is None  # ... or part of it
    assert counts_that_add_up(counts(), listed, None) is None  # the batch's progress was never seen
