"""Groups of pipelines: who is in which group, a group's one schedule, a group's exit code,
and what is pending before Spark starts (read from the logs alone)."""

from __future__ import annotations

import os
import time
from datetime import date

import pytest

from jobs import declare
from jobs.declare.groups import group_of, groups, own_schedule, schedule_group
from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations
from jobs.request import RunRequest
from jobs.run.pending import pending_input


@pytest.fixture
def by_schedule(monkeypatch):
    monkeypatch.setenv("JOBS_GROUP_BY_SCHEDULE", "true")


def test_a_group_is_declared_or_follows_the_schedule_when_asked(by_schedule):
    clickstream = declare.load("clickstream")
    assert group_of(clickstream) == "hourly" and own_schedule(clickstream) is None
    named = clickstream.model_copy(update={"group": "small"})
    assert group_of(named) == "small"
    assert schedule_group("*/15 * * * *") == "cron_15"
    assert schedule_group("0 6 * * 1-5") == "cron_0_6_1_5"
    assert sorted(groups(declare.load_all())) == ["hourly"]


def test_without_a_group_a_pipeline_keeps_its_own_schedule():
    clickstream = declare.load("clickstream")
    assert group_of(clickstream) is None and own_schedule(clickstream) == "@hourly"
    assert groups(declare.load_all()) == {}


def test_a_pipeline_run_on_arrival_joins_a_group_only_by_declaring_it(by_schedule):
    on_arrival = declare.load("clickstream").model_copy(update={"schedule": "on_arrival"})
    assert group_of(on_arrival) is None and own_schedule(on_arrival) == "on_arrival"
    declared = on_arrival.model_copy(update={"group": "g"})
    assert group_of(declared) == "g" and own_schedule(declared) is None
    alerts = declare.load("rack_alerts").model_copy(update={"group": "g"})  # shipped on arrival
    assert [m.name for m in groups({"clickstream": declared, "rack_alerts": alerts})["g"]] == [
        "clickstream",
        "rack_alerts",
    ]
    hourly = declare.load("clickstream").model_copy(update={"group": "g"})
    with pytest.raises(
        declare.DeclarationError, match="one schedule, not: clickstream @hourly, rack_alerts on_arrival"
    ):
        groups({"clickstream": hourly, "rack_alerts": alerts})


def test_a_group_with_two_schedules_is_refused():
    hourly = declare.load("clickstream").model_copy(update={"group": "g"})
    daily = declare.load("device_steps").model_copy(update={"group": "g", "schedule": "@daily"})
    with pytest.raises(declare.DeclarationError) as refused:
        groups({"clickstream": hourly, "device_steps": daily})
    assert str(refused.value) == (
        "group 'g': its pipelines must share one schedule, not: clickstream @hourly, device_steps @daily"
    )


def test_a_group_exits_with_its_worst_member():
    assert ExitCode.worst([ExitCode.OK, ExitCode.REFUSED, ExitCode.DATA]) == ExitCode.DATA
    assert ExitCode.worst([ExitCode.INVALID, ExitCode.FAILED]) == ExitCode.FAILED
    assert ExitCode.worst([ExitCode.OK, ExitCode.OK]) == ExitCode.OK
    assert ExitCode.worst([ExitCode.REFUSED, ExitCode.STOPPED]) == ExitCode.STOPPED


def _checkpoint_with(checkpoint, taken: dict[str, int]) -> None:
    """What a committed, accounted batch 0 leaves: its offsets, commit and source log."""
    for folder in ("offsets", "commits", "sources/0"):
        (checkpoint / folder).mkdir(parents=True)
    entries = "".join(f'{{"path":"file://{path}","timestamp":{ms},"batchId":0}}\n' for path, ms in taken.items())
    (checkpoint / "sources" / "0" / "0").write_text("v1\n" + entries)
    (checkpoint / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":0}\n{"logOffset":0}\n')
    (checkpoint / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def test_pending_input_is_read_from_the_file_sources_log(tmp_path):
    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path))
    landing = tmp_path / "landing" / "clickstream"
    landing.mkdir(parents=True)
    taken, new, old = landing / "a.json", landing / "b.json", landing / "c.json"
    for path in (taken, new, old):
        path.write_text('{"x": 1}\n')
    (landing / "_SUCCESS").write_text("")  # hidden: Spark never reads it
    now_ms = int(time.time() * 1000)
    eight_days_ago = time.time() - 8 * 24 * 3600
    os.utime(old, (eight_days_ago, eight_days_ago))  # an old time is still new: the log is an index
    assert pending_input(pipeline, RunRequest(pipeline.name, locations)).files == 3  # a first run takes every file

    checkpoint = tmp_path / "checkpoints" / "clickstream"
    _checkpoint_with(checkpoint, {str(taken): now_ms})
    assert (
        pending_input(pipeline, RunRequest(pipeline.name, locations)).needs_spark
        == "committed batches are not accounted yet"
    )

    (checkpoint / "_pipeline" / "accounting").mkdir(parents=True)
    (checkpoint / "_pipeline" / "accounting" / "0").write_text("{}")
    pending = pending_input(pipeline, RunRequest(pipeline.name, locations))
    expected = (2, new.stat().st_size + old.stat().st_size, None)  # b.json and c.json, whatever its time
    assert (pending.files, pending.bytes, pending.needs_spark) == expected

    new.unlink()
    old.unlink()
    assert pending_input(pipeline, RunRequest(pipeline.name, locations)).nothing_new
    assert pending_input(pipeline, RunRequest(pipeline.name, locations, landing_glob="dt=*/*")).needs_spark
    # --landing-since: only the dt= folders the run lists (here from the 2nd to the 3rd).
    for day in (1, 2, 3, 4):
        (landing / f"dt=2023-07-0{day}").mkdir()
        (landing / f"dt=2023-07-0{day}" / "e.json").write_text("{}\n" * day)
    narrowed = RunRequest(pipeline.name, locations, landing_since=date(2023, 7, 2), landing_until=date(2023, 7, 3))
    pending = pending_input(pipeline, narrowed)
    assert (pending.files, pending.bytes) == (2, 3 * 5)
    assert pending_input(pipeline, RunRequest(pipeline.name, locations, landing_since=date(2023, 7, 5))).nothing_new
    (checkpoint / "offsets" / "1").write_text((checkpoint / "offsets" / "0").read_text())
    assert pending_input(pipeline, RunRequest(pipeline.name, locations)).needs_spark == (
        "batch 1 was planned and not committed: it is redone"
    )
