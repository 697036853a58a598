"""Processors as pure functions: pandas frames in, a fake state beside, rows out.

No Spark here: `FakeState` plays the part of Spark's GroupState with the calls a
processor makes, so each rule is checked on its own, batch by batch.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pandas as pd
import pytest

from jobs.columns import BLOCK_START, EVENT_TIME, LINE_NUMBER, SOURCE_FILE
from jobs.processors import PROCESSORS
from jobs.processors.rack_status import RackStatusSettings, rack_status
from jobs.processors.spending_sessions import SpendingSessionsSettings, sessions_of, spending_sessions

T0 = datetime(2023, 7, 30, 10, 0)


class FakeState:
    """What Spark's GroupState offers a processor, kept in plain Python."""

    def __init__(self, value: tuple | None = None, watermark: datetime = datetime(1970, 1, 1), timed_out=False):
        self.value = value
        self.watermark_ms = int((watermark - datetime(1970, 1, 1)).total_seconds() * 1000)
        self.timed_out = timed_out
        self.timeout_ms: int | None = None

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple:
        return self.value

    @property
    def hasTimedOut(self) -> bool:
        return self.timed_out

    def update(self, value: tuple) -> None:
        self.value = value

    def remove(self) -> None:
        self.value = None

    def getCurrentWatermarkMs(self) -> int:
        return self.watermark_ms

    def setTimeoutTimestamp(self, ms: int) -> None:
        self.timeout_ms = ms


def frames(column: str, readings: list[tuple[float, float]]) -> list[pd.DataFrame]:
    """Readings as (minutes after T0, value), split over two frames as Spark may hand them."""
    rows = pd.DataFrame(
        {EVENT_TIME: [T0 + timedelta(minutes=m) for m, _ in readings], column: [v for _, v in readings]}
    )
    return [rows.iloc[: len(rows) // 2], rows.iloc[len(rows) // 2 :]]


def emitted(output) -> list[tuple]:
    return [tuple(row) for row in pd.concat(list(output)).itertuples(index=False)]


def test_rack_status_warns_after_three_high_readings_and_recovers_at_the_next_low_one():
    process = rack_status(RackStatusSettings(), ["rack"])
    state = FakeState()
    readings = [(0, 99.0), (1, 100.0), (2, 104.0), (3, 101.0), (4, 102.0), (5, 98.0)]
    assert emitted(process(("rack2",), iter(frames("temperature", readings)), state)) == [
        ("rack2", "WARNING", T0 + timedelta(minutes=3), 101.0, 3),
        ("rack2", "NORMAL", T0 + timedelta(minutes=5), 98.0, 0),
    ]
    assert state.get == ("NORMAL", 0)


def test_rack_status_carries_a_run_of_high_readings_across_batches_and_orders_by_event_time():
    process = rack_status(RackStatusSettings(threshold=50, readings=2), ["rack"])
    state = FakeState()
    assert emitted(process(("r",), iter(frames("temperature", [(1, 60.0)])), state)) == []
    assert state.get == ("NORMAL", 1)
    # Out of order within the batch: 10:03 (low) comes after 10:02 (high) once sorted.
    later = [(3, 40.0), (2, 55.0)]
    assert emitted(process(("r",), iter(frames("temperature", later)), state)) == [
        ("r", "WARNING", T0 + timedelta(minutes=2), 55.0, 2),
        ("r", "NORMAL", T0 + timedelta(minutes=3), 40.0, 0),
    ]


def test_two_spikes_are_not_enough():
    process = rack_status(RackStatusSettings(), ["rack"])
    state = FakeState()
    assert emitted(process(("rack3",), iter(frames("temperature", [(0, 104.0), (1, 100.0), (2, 99.9)])), state)) == []
    assert state.get == ("NORMAL", 0)


def test_sessions_split_where_the_pause_exceeds_the_gap():
    hour = 3_600_000_000
    transactions = [(0, 1.0), (hour, 2.0), (2 * hour + 1, 3.0), (hour // 2, 4.0)]
    assert sessions_of(transactions, hour) == [[(0, 1.0), (hour // 2, 4.0), (hour, 2.0)], [(2 * hour + 1, 3.0)]]


def test_a_session_closes_once_the_watermark_passes_its_end_by_the_gap():
    process = spending_sessions(SpendingSessionsSettings(), ["userId"])
    # Transactions at 10:00, 10:20, then 12:00 (more than an hour later: a new session).
    batch = frames("amount", [(0, 10.0), (20, 5.5), (120, 7.0)])
    state = FakeState(watermark=T0 + timedelta(hours=1, minutes=21))  # past 10:20 + 1 hour
    assert emitted(process(("alice",), iter(batch), state)) == [
        ("alice", pd.Timestamp(T0), pd.Timestamp(T0 + timedelta(minutes=20)), 15.5, 2)
    ]
    open_session = [[int((T0 + timedelta(hours=2) - datetime(1970, 1, 1)).total_seconds() * 1e6), 7.0]]
    assert json.loads(state.get[0]) == open_session
    # Called back once the watermark passes 12:00 + 1 hour.
    assert state.timeout_ms == int((T0 + timedelta(hours=3) - datetime(1970, 1, 1)).total_seconds() * 1000)


def test_a_timed_out_call_closes_what_is_left_and_forgets_the_key():
    process = spending_sessions(SpendingSessionsSettings(gap="30 minutes"), ["userId"])
    start_us = int((T0 - datetime(1970, 1, 1)).total_seconds() * 1e6)
    state = FakeState(value=(json.dumps([[start_us, 3.0], [start_us + 60_000_000, 4.0]]),), timed_out=True)
    state.watermark_ms = start_us // 1000 + 32 * 60 * 1000  # 10:32: past 10:01 + 30 minutes
    assert emitted(process(("bob",), iter([]), state)) == [
        ("bob", pd.Timestamp(T0), pd.Timestamp(T0 + timedelta(minutes=1)), 7.0, 2)
    ]
    assert not state.exists


def test_a_late_arrival_bridges_two_open_sessions():
    process = spending_sessions(SpendingSessionsSettings(), ["userId"])
    state = FakeState()
    assert (
        emitted(process(("carol",), iter(frames("amount", [(0, 1.0), (100, 2.0)])), state)) == []
    )  # 100 minutes apart
    assert len(json.loads(state.get[0])) == 2
    state.watermark_ms = int((T0 + timedelta(hours=2, minutes=41) - datetime(1970, 1, 1)).total_seconds() * 1000)
    rows = emitted(process(("carol",), iter(frames("amount", [(50, 4.0)])), state))  # 10:50 joins both
    assert rows == [("carol", pd.Timestamp(T0), pd.Timestamp(T0 + timedelta(minutes=100)), 7.0, 3)]


@pytest.mark.parametrize("name", sorted(PROCESSORS))
def test_each_processor_says_what_it_emits_and_reads(name):
    processor = PROCESSORS[name]
    settings = processor.settings()
    columns = processor.output_columns(settings, ["key"])
    assert columns[0] == "key" and len(columns) == len(processor.output(settings)) + 1
    assert processor.inputs(settings) and processor.state


class Counted:
    """Stands in for the run's tally: what the guard quarantines."""

    def __init__(self):
        self.added: list = []

    def add(self, files) -> None:
        self.added.append(files)


def where(frame: pd.DataFrame, file: str = "file:///l/a.json") -> pd.DataFrame:
    return frame.assign(**{SOURCE_FILE: file, BLOCK_START: 0, LINE_NUMBER: range(1, len(frame) + 1)})


def test_a_processor_that_raises_leaves_the_state_as_it_was_and_quarantines_the_key_s_rows():
    from jobs.flow.guard import Guarded

    def breaks_halfway(key, pdfs, state):
        state.update(("WARNING", 9))
        state.setTimeoutTimestamp(123)
        raise ZeroDivisionError("division by zero")
        yield  # a generator, as processors are

    tally, state = Counted(), FakeState(("NORMAL", 1))
    rows = where(pd.DataFrame({EVENT_TIME: [T0, T0], "temperature": [1.0, 2.0]}))
    out = list(Guarded(breaks_halfway, "rack_status", tally)(("r1",), iter([rows]), state))

    assert out == [] and (state.value, state.timeout_ms) == (("NORMAL", 1), None)
    [files] = tally.added
    [(file, count)] = files.items()
    assert (file, count.records, [(q.line_in_block, q.reason) for q in count.quarantined]) == (
        "file:///l/a.json",
        0,  # counted as records where they were read; here only moved to the quarantine
        [(1, "processor_error"), (2, "processor_error")],
    )
    assert count.quarantined[0].detail == "rack_status failed for key ['r1']: ZeroDivisionError: division by zero"


def test_a_processor_that_succeeds_writes_its_state_through_the_guard():
    from jobs.flow.guard import Guarded

    settings = RackStatusSettings(threshold=100, readings=1)
    tally, state = Counted(), FakeState()
    rows = where(pd.DataFrame({EVENT_TIME: [T0], "temperature": [120.0]}))
    [out] = Guarded(rack_status(settings, ["rack"]), "rack_status", tally)(("r1",), iter([rows]), state)
    assert (list(out["status"]), state.value, tally.added) == (["WARNING"], ("WARNING", 1), [])


def test_a_processor_declares_its_columns_as_name_and_type_pairs_and_the_ddl_is_built_from_them(spark):
    """A type holding a comma (decimal(10,2)) or a name holding a space is no longer split
    by hand: Spark parses the DDL built from the pairs back into the same columns."""
    from jobs.processors.base import ddl

    columns = [("amount", "decimal(10,2)"), ("rack id", "string"), ("seen", "map<string,int>")]
    parsed = spark.createDataFrame([], ddl(columns)).schema
    assert [(f.name, f.dataType.simpleString()) for f in parsed] == columns
    settings = RackStatusSettings(column="temp")
    assert PROCESSORS["rack_status"].output_columns(settings, ["rack"]) == [
        "rack", "status", "changed_at", "temp", "consecutive_high",
    ]  # fmt: skip
