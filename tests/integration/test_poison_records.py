"""A poison file among good ones, for each pattern (a window with sums, a processor, a
join, events): every run succeeds, the good rows are used, the poison is quarantined with
its reason, a run with nothing new changes nothing, and each table equals the independent
model's (tests/model.py), which knows the rules a record must meet but not the code.

Poison is what stopped pipelines or silently switched them off: 100,000 nested `[`, sums
past 2^63, a number beyond a double, an event stamped in the year 9999 (or year 1 for a
processor, whose pandas cannot hold it), a lone surrogate, NaN.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from demo import samples
from jobs import declare
from jobs.declare.load import pipelines_dir
from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations
from jobs.processors import PROCESSORS
from jobs.run.runner import RunFailed
from tests.helpers import REPO, declaration_copy, event, land, land_in_order, python_cmd, run_pipeline
from tests.histories import USERS, USERS_LATER, assert_history_matches, run_histories
from tests.model import AdJoinModel, DeviceStepsModel, EventsModel, RuleBook, SpendingSessionsModel, enriched_row

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
        json.dumps(
            {"event_id": "e7", "user_id": "user1", "event": "click", "eventtimestamp": "+10000-01-01T00:00:00Z"}
        ),
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
    model = EventsModel(lambda line: enriched_row(line, users), RuleBook.of("clickstream_enriched"))
    arrivals = poisoned("clickstream_enriched")
    assert_history_matches(history, model, arrivals, lambda n: users.update(USERS if n < 3 else USERS_LATER))

    assert _quarantine(history) == COMMON | {
        "event_time_in_future": 1,
        "wrong_field_type": 1,
        "event_time_out_of_range": 1,
    }


def test_a_batch_failing_on_its_data_names_the_file_and_the_command_that_gets_past_it(spark, tmp_path):
    """A declaration that fails a batch on purpose (new fields, `new_fields: fail`) stands
    for any data a batch cannot get past: every rerun redoes the batch and fails the same
    way, until the file is quarantined by the command the error names."""
    source = yaml.safe_load((pipelines_dir() / "clickstream_inferred.yaml").read_text())["source"]
    folder = declaration_copy(tmp_path / "pipelines", "clickstream_inferred", source={**source, "new_fields": "fail"})
    spec = declare.from_mapping(yaml.safe_load((folder / "clickstream_inferred.yaml").read_text()))
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    land(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:20Z")]})
    run_pipeline(spark, spec, locations)
    bad = [event("u2", "2023-07-30T10:01:00Z", shoe_size=44), "", event("u3", "2023-07-30T10:01:10Z")]
    (stuck,) = land(locations.landing, {"b.json": bad})
    land_in_order(locations.landing, {"c.json": [event("u4", "2023-07-30T10:02:00Z")]})

    for _ in range(2):  # the same failure, run after run
        with pytest.raises(RunFailed) as failed:
            run_pipeline(spark, spec, locations)
        message = str(failed.value)
        assert f"failed on its data, reading {stuck} (line unknown): USER_RAISED_EXCEPTION" in message
        assert "new field(s) shoe_size" in message
        command = f"python -m jobs quarantine-file clickstream_inferred {stuck} --checkpoint {locations.checkpoint}"
        assert command in message
    offsets = {p.name: p.read_bytes() for p in (Path(locations.checkpoint) / "offsets").iterdir()}

    env = {**os.environ, "JOBS_PIPELINES_DIR": str(folder)}
    done = subprocess.run(
        [*python_cmd(*command.split()[3:]), "--reason", "producer sent shoe sizes"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = run_pipeline(spark, spec, locations)

    assert report.status == "succeeded"
    assert (report.input_rows, report.quarantined_rows, report.used_rows) == (3, 2, 1)  # c.json's row is used
    by_file = {Path(r["source_file"]).name: r for r in quarantine_records(locations.quarantine)}
    assert by_file["b.json"]["reason"] == "file_quarantined"
    assert by_file["b.json"]["detail"] == "producer sent shoe sizes"
    assert sorted(r["line_number"] for r in quarantine_records(locations.quarantine)) == [1, 3]  # unread, blank skipped
    # Spark's own record of the batch is as it was: the batch was redone from the same files.
    assert {p.name: p.read_bytes() for p in (Path(locations.checkpoint) / "offsets").iterdir()} == offsets
    refused = subprocess.run(
        python_cmd("quarantine-file", "clickstream_inferred", str(Path(locations.landing) / "a.json"),
                     "--checkpoint", locations.checkpoint, "--reason", "too late"),
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert refused.returncode == ExitCode.REFUSED
    assert "was read by a committed batch of clickstream_inferred already" in refused.stderr


def rack(name: str, minute: int, temperature: float) -> str:
    return json.dumps({"rack": name, "temperature": temperature, "ts": f"2023-07-30T10:{minute:02d}:00Z"})


def quarantine_records(quarantine: str) -> list[dict]:
    return [json.loads(line) for p in Path(quarantine).glob("batch_id=*/*.json") for line in p.read_text().splitlines()]


def test_a_processor_that_raises_for_one_key_quarantines_that_key_s_rows_and_goes_on(spark, tmp_path, monkeypatch):
    """rack_alerts with a processor that raises for one rack: that rack's rows of each
    batch are quarantined with the exception, its state is not written, the others go on."""
    real = PROCESSORS["rack_status"]

    def failing(settings, keys):
        process = real.function(settings, keys)

        def maybe_fail(key, pdfs, state):
            if key[0] == "r-bad":
                state.update(("WARNING", 99))  # written, then the processor fails: not applied
                raise ValueError("cannot read this rack")
            return process(key, pdfs, state)

        return maybe_fail

    monkeypatch.setitem(PROCESSORS, "rack_status", dataclasses.replace(real, function=failing))
    spec = declare.load("rack_alerts")
    locations = Locations.resolve(spec.name, root=str(tmp_path))
    readings = [rack("r-ok", 10 + m, 120.0) for m in range(3)] + [rack("r-bad", 10 + m, 120.0) for m in range(2)]
    land(locations.landing, {"racks.json": readings})

    report = run_pipeline(spark, spec, locations)

    assert (report.status, report.input_rows, report.used_rows, report.quarantined_rows) == ("succeeded", 5, 3, 2)
    assert report.state_rows == 1  # r-ok only: r-bad's state was not written
    records = sorted((r["line_number"], r["reason"], r["detail"]) for r in quarantine_records(locations.quarantine))
    detail = "rack_status failed for key ['r-bad']: ValueError: cannot read this rack"
    assert records == [(4, "processor_error", detail), (5, "processor_error", detail)]
    assert [row.status for row in spark.read.parquet(locations.output).collect()] == ["WARNING"]


def test_a_future_dated_event_is_quarantined_and_the_next_arrival_is_used(spark, clickstream, locations):
    land(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:20Z"), event("u2", "9999-12-31T23:59:00Z")]})
    first = run_pipeline(spark, clickstream, locations)
    land_in_order(
        locations.landing, {"b.json": [event("u3", "2023-07-30T10:07:00Z"), event("u4", "2023-07-30T10:08:00Z")]}
    )
    second = run_pipeline(spark, clickstream, locations)

    assert (first.quarantined_rows, first.used_rows, first.watermark) == (1, 1, "2023-07-30T09:55:20Z")
    assert (second.used_rows, second.late_rows_dropped, second.warnings) == (2, 0, [])
    [record] = quarantine_records(locations.quarantine)
    assert record["reason"] == "event_time_in_future"
    assert record["detail"].startswith(
        "eventtimestamp: 9999-12-31T23:59:00Z is more than 1 day after the batch's time "
    )


def test_a_batch_read_again_decides_about_the_future_at_the_batch_s_own_time(spark, tmp_path):
    """An event 5 s ahead, with max_future 1 second: in the future at the batch's time,
    not when its accounting is redone later (from the time Spark recorded for the batch)."""
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    raw["source"]["event_time"]["max_future"] = "1 second"
    spec = declare.from_mapping(raw)
    locations = Locations.resolve(spec.name, root=str(tmp_path))
    soon = (datetime.now(UTC) + timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    land(locations.landing, {"a.json": [event("u1", soon), event("u2", "2023-07-30T10:00:20Z")]})
    run_pipeline(spark, spec, locations)
    shutil.rmtree(Path(locations.ledger) / "accounting")  # as if the run died before accounting
    time.sleep(max(0.0, (datetime.fromisoformat(soon) - datetime.now(UTC)).total_seconds() + 2))

    report = run_pipeline(spark, spec, locations)

    assert report.recovered_batch_ids and (report.input_rows, report.quarantined_rows) == (2, 1)
    assert [r["reason"] for r in quarantine_records(locations.quarantine)] == ["event_time_in_future"]
