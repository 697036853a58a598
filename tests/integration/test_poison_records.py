"""A poison file among good ones, for each pattern (a window with sums, a processor, a
join, events): every run succeeds, the good rows are used, the poison is quarantined with
its reason, a run with nothing new changes nothing, and each table equals the independent
model's (tests/model.py), which knows the rules a record must meet but not the code.

Poison is what stopped pipelines or silently switched them off: 100,000 nested `[`, sums
past 2^63, a number beyond a double, an event stamped in the year 9999 (or year 1 for a
processor, whose pandas cannot hold it), a lone surrogate, NaN.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demo import samples
from tests.histories import USERS, USERS_LATER, assert_history_matches, run_histories
from tests.model import AdJoinModel, DeviceStepsModel, EventsModel, SpendingSessionsModel, enriched_row

EVERYWHERE = [
    "[" * 100_000,
    '{"deep": ' + "[" * 100_000 + "1" + "]" * 100_000 + "}",
    '{"a": "\\ud800"}',
    '{"a": NaN}',
]


def _steps(timestamp: str, num_steps: object, miles: object = 1.5) -> str:
    return json.dumps({"id": 1, "user_id": 7, "device_id": 3, "num_steps": num_steps, "miles_walked": miles,
                       "calories_burnt": 2.0, "timestamp": timestamp}).replace('"@"', "1e999")  # fmt: skip


POISON = {
    # Two readings of the largest long in one window: the sum no long can hold.
    "device_steps": [
        _steps("2023-07-30 10:00:10", 2**63 - 1),
        _steps("2023-07-30 10:00:20", 2**63 - 1),
        _steps("2023-07-30 10:00:30", 2**63),  # beyond a long
        _steps("2023-07-30 10:00:40", 5, "@"),  # miles_walked 1e999
        _steps("9999-12-31 23:59:00", 5),  # a broken clock
    ],
    "spending_sessions": [
        json.dumps({"userId": "u9", "transactionId": "t1", "transactionTime": "0001-01-01T00:00:00Z", "amount": 1.0}),
        json.dumps({"userId": "u9", "transactionId": "t2", "transactionTime": "9999-12-31T23:59:00Z", "amount": 1.0}),
        '{"userId": "u9", "transactionId": "t3", "transactionTime": "2023-07-30T10:00:00Z", "amount": 1e999}',
        json.dumps({"userId": "u9", "transactionId": "t4", "transactionTime": "2023-07-30T10:00:00Z", "amount": "x"}),
    ],
    "ad_clicks": [
        json.dumps({"impression_id": "i9", "ad_id": "a9", "impression_time": "9999-12-31T23:59:00Z"}),
        json.dumps({"impression_id": "i8", "ad_id": 8, "impression_time": "2023-07-30T10:00:00Z"}),
    ],
    "clickstream_enriched": [
        json.dumps({"event_id": "e9", "user_id": "user1", "event": "click", "eventtimestamp": "9999-12-31T23:59:00Z"}),
        json.dumps({"event_id": "e8", "user_id": 1, "event": "click", "eventtimestamp": "2023-07-30T10:00:00Z"}),
        json.dumps({"event_id": "e7", "user_id": "user1", "event": "click", "eventtimestamp": "+10000-01-01T00:00:00Z"}),
    ],
}
POISON_FILE = {"ad_clicks": "impressions/poison.json"}


def poisoned(name: str) -> list[dict[str, list[str]]]:
    """The demo's arrivals, with a poison file in the first."""
    arrivals = samples.arrivals(name)
    first = {**arrivals[0], POISON_FILE.get(name, "poison.json"): [*EVERYWHERE, *POISON[name]]}
    return [first, *arrivals[1:]]


@pytest.fixture(scope="module")
def histories(spark, tmp_path_factory):
    return run_histories(spark, str(tmp_path_factory.mktemp("poison") / "root"), sorted(POISON), poisoned)


def _quarantine(history) -> dict[str, int]:
    reasons: dict[str, int] = {}
    for path in Path(history.locations.quarantine).glob("batch_id=*/*.json"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if Path(record["source_file"]).name == "poison.json":
                reasons[record["reason"]] = reasons.get(record["reason"], 0) + 1
    return reasons


COMMON = {"too_deeply_nested": 2, "malformed_json": 2}


def test_a_window_sums_past_a_long_and_goes_on_past_a_broken_clock(histories):
    history = histories["device_steps"]
    model = DeviceStepsModel()
    assert_history_matches(history, model, poisoned("device_steps"))

    assert _quarantine(history) == COMMON | {"wrong_field_type": 2, "event_time_in_future": 1}
    sums = {row[2] for row in model.rows()}
    assert any(s > 2**64 for s in sums)  # two readings of the largest long, summed exactly
    assert history.runs[-1].report.used_rows > 0  # later arrivals are used, not dropped as late
    assert not any(run.report.warnings for run in history.runs)


def test_a_processor_gets_no_time_pandas_cannot_hold(histories):
    history = histories["spending_sessions"]
    model = SpendingSessionsModel()
    assert_history_matches(history, model, poisoned("spending_sessions"))

    assert _quarantine(history) == COMMON | {
        "event_time_out_of_range": 1,
        "event_time_in_future": 1,
        "wrong_field_type": 2,
    }


def test_a_join_quarantines_each_side_s_poison(histories):
    history = histories["ad_clicks"]
    model = AdJoinModel()
    assert_history_matches(history, model, poisoned("ad_clicks"))

    assert _quarantine(history) == COMMON | {"event_time_in_future": 1, "wrong_field_type": 1}


def test_events_keep_the_good_rows_and_quarantine_the_rest(histories):
    history = histories["clickstream_enriched"]
    users: dict[str, tuple[str, str]] = {}
    model = EventsModel(lambda line: enriched_row(line, users))
    arrivals = poisoned("clickstream_enriched")
    assert_history_matches(history, model, arrivals, lambda n: users.update(USERS if n < 3 else USERS_LATER))

    assert _quarantine(history) == COMMON | {
        "event_time_in_future": 1,
        "wrong_field_type": 1,
        "event_time_out_of_range": 1,
    }
