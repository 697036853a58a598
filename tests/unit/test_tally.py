"""Counting rows as the query reads them (jobs/flow/tally.py), and taking a batch's count
for its account (jobs/accounting/batches.py): pure functions on hand-made input."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from jobs.accounting.accounts import counts_that_add_up
from jobs.flow.tally import FileCount, Quarantined, RowCounter, TaskCounts, take_batch
from jobs.lake.layout import from_spark


class FakeTally:
    """What the tasks would add to the run's accumulator."""

    def __init__(self):
        self.added = []

    def add(self, files):
        self.added.append(files)


def at(minute: int) -> datetime:
    return datetime(2023, 7, 30, 10, minute, tzinfo=UTC)


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def test_each_record_is_counted_by_file_and_only_quarantined_ones_bring_their_line():
    tally = FakeTally()
    usable = RowCounter(tally, ("known_event", "has_id"))(
        pa.array(["a.json", "a.json", "b.json", "b.json"]),
        pa.array([at(1), at(2), None, at(2)], pa.timestamp("us", tz="UTC")),  # late_at
        pa.array([False, True, True, False]),  # a value rescued
        pa.array([3, 2, 0, 2], pa.int64()),  # the rules broken: bit 0 known_event, bit 1 has_id
        pa.array([None, None, "malformed_json", None]),  # quarantine_reason
        pa.array([None, None, 0, None], pa.int64()),  # block start, only for quarantined records
        pa.array([None, None, 3, None], pa.int64()),  # line number in the block
        pa.array([None, None, "{x", None]),  # the line
        pa.array([None, None, "JSON is malformed", None]),  # detail
    )
    assert usable.to_pylist() == [True, True, False, True]
    [files] = tally.added
    assert {name: count.records for name, count in files.items()} == {"a.json": 2, "b.json": 2}
    assert {name: count.rescued for name, count in files.items()} == {"a.json": 1, "b.json": 0}  # usable ones only
    assert files["a.json"].violations == {"known_event": 1, "has_id": 2}  # a record breaking both counts for each
    assert files["b.json"].violations == {"has_id": 1}
    assert files["a.json"].quarantined == []
    assert files["b.json"].quarantined == [Quarantined(0, 3, "{x", "malformed_json", "JSON is malformed")]
    # Late against a watermark: at or before it, by the time the pattern gave (late_at).
    assert [files["a.json"].late(ms(at(m))) for m in (0, 1, 2)] == [0, 1, 2]
    assert files["b.json"].late(ms(at(2))) == 1  # the quarantined record is not late too


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
