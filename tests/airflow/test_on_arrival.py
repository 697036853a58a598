"""Run on arrival, under a running Airflow (scheduler, DAG processor, triggerer and API
server, as `make airflow` starts them): clickstream declared `schedule: on_arrival`, and the
group `racks` (rack_alerts and rack_temperatures) on arrival. Each landing is an Asset with
its watcher; an idle landing starts no run; a file landing starts exactly one, which takes
it, and its log names the file; a file in one member's landing runs the whole group in one
application; a burst of files makes one run; each run's Asset event names the files; a
triggerer killed and replaced loses no landing. In S3, a bucket's notification starts a
run, and the listing catches a lost one. The tables against the window model."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta

import pytest

from demo import samples
from infra import processes
from infra.airflow.running import Scheduler
from infra.s3 import notifications
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.helpers import all_lines, declaration_copy, event, land, table_rows
from tests.model import ClickstreamModel

pytestmark = pytest.mark.slow

DAG_ID = "jobs_clickstream"
GROUP_DAG_ID = "jobs_group_racks"
RACKS = ("rack_alerts", "rack_temperatures")
QUIET_S = 4
LISTING_S = 20  # in S3 with notifications: the listing only catches what they lose
T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)


def arrival(name: str, minute: int) -> dict[str, list[str]]:
    at = T0 + timedelta(minutes=minute)
    lines = [
        event(f"u{i % 2}", (at + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ"), f"{name}-{i}") for i in range(4)
    ]
    return {f"{name}.json": lines}


def watched_landings(airflow: Scheduler) -> dict[str, tuple[list[str], list[str]]]:
    """Each watched Asset's last path part: its watchers' and scheduled DAGs' names."""
    return {
        asset["uri"].rsplit("/", 1)[1]: (
            [watcher["name"] for watcher in asset["watchers"]],
            [dag["dag_id"] for dag in asset["scheduled_dags"]],
        )
        for asset in airflow.assets()
        if asset["watchers"]
    }


def on_arrival_runs(airflow: Scheduler, dag_id: str = DAG_ID) -> list[dict]:
    return [run for run in airflow.runs(dag_id) if run["run_type"] == "asset_triggered"]


def ended(airflow: Scheduler, count: int, dag_id: str = DAG_ID, within_s: float = 300) -> list[dict]:
    """The DAG's first `count` runs on arrival, once each has ended."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        runs = on_arrival_runs(airflow, dag_id)
        if len(runs) >= count and all(run["state"] in ("success", "failed") for run in runs):
            return runs
        time.sleep(1)
    raise AssertionError(f"{count} run(s) on arrival had not ended within {within_s} s: {on_arrival_runs(airflow)}")


def said(airflow: Scheduler, run: dict, dag_id: str = DAG_ID) -> list[dict]:
    """What the Asset events that started the run said (their watchers' payloads)."""
    return [event["extra"]["payload"] for event in airflow.triggering_events(dag_id, run["dag_run_id"])]


def named(airflow: Scheduler, run: dict, dag_id: str = DAG_ID) -> list[str]:
    return sorted(name for payload in said(airflow, run, dag_id) for name in payload["named"])


def started_by_clock(airflow: Scheduler, dag_ids: list[str], within_s: float = 300) -> None:
    """Unpaused, each DAG runs once by its `at_least_every` clock: until those runs end."""
    deadline = time.monotonic() + within_s
    for dag_id in dag_ids:
        while not any(run["state"] in ("success", "failed") for run in airflow.runs(dag_id)):
            assert time.monotonic() < deadline, airflow.runs(dag_id)
            time.sleep(1)


def test_files_landing_start_one_run_a_burst_one_and_an_idle_landing_none(spark, tmp_path):
    quick = {"quiet_period": f"{QUIET_S} seconds", "listing_every": "1 second"}
    folder = tmp_path / "pipelines"
    declaration_copy(folder, "clickstream", schedule="on_arrival", on_arrival=quick)
    for name in RACKS:
        declaration_copy(folder, name, schedule="on_arrival", on_arrival=quick, group="racks")
    root = tmp_path / "root"
    locations = Locations.resolve("clickstream", root=str(root))
    for name in ("clickstream", *RACKS):
        (root / "landing" / name).mkdir(parents=True)
    airflow = Scheduler(tmp_path / "home", root)
    airflow.env["JOBS_PIPELINES_DIR"] = str(folder)

    restarted = None
    try:  # started inside: a start that fails part way (a DAG that never parses) is stopped too
        airflow.start([DAG_ID, GROUP_DAG_ID])
        started_by_clock(airflow, [DAG_ID, GROUP_DAG_ID])  # then an idle landing starts nothing
        deadline = time.monotonic() + 120
        # Each landing is an Asset Airflow shows with its watcher (once the scheduler has
        # registered its trigger) and the DAG it starts.
        expected = {
            "clickstream": (["jobs_clickstream_arrivals"], [DAG_ID]),
            "rack_alerts": (["jobs_rack_alerts_arrivals"], [GROUP_DAG_ID]),
            "rack_temperatures": (["jobs_rack_temperatures_arrivals"], [GROUP_DAG_ID]),
        }
        while (watched := watched_landings(airflow)) != expected:
            assert time.monotonic() < deadline, watched
            time.sleep(1)
        time.sleep(3 * QUIET_S)
        assert on_arrival_runs(airflow) == on_arrival_runs(airflow, GROUP_DAG_ID) == []

        first = arrival("first", 0)
        land(locations.landing, first)
        readings = samples.arrivals("rack_alerts")[0]  # one member's landing: the whole group runs
        land(Locations.resolve("rack_alerts", root=str(root)).landing, readings)
        runs = ended(airflow, 1)
        assert [run["state"] for run in runs] == ["success"], airflow.failures(DAG_ID, runs)
        assert named(airflow, runs[0]) == ["first.json"]
        assert "started by files landing at" in airflow.task_log(DAG_ID, runs[0]["dag_run_id"], "run")
        assert "1 new file(s)" in airflow.task_log(DAG_ID, runs[0]["dag_run_id"], "run")
        (group_run,) = ended(airflow, 1, GROUP_DAG_ID)
        assert group_run["state"] == "success" and named(airflow, group_run, GROUP_DAG_ID) == sorted(readings)
        assert ", ".join(sorted(readings)) in airflow.task_log(GROUP_DAG_ID, group_run["dag_run_id"], "run")
        alerts, temperatures = (load_reports(Locations.resolve(n, root=str(root)).runs)[-1] for n in RACKS)
        assert alerts.run_id == temperatures.run_id  # one application for both
        assert (alerts.input_files, temperatures.input_files) == (len(readings), 0)

        burst = {}
        for number in range(3):  # closer together than the quiet period: one run
            burst |= arrival(f"burst-{number}", 5 + 5 * number)
            land(locations.landing, {f"burst-{number}.json": burst[f"burst-{number}.json"]})
            time.sleep(1)
        runs = ended(airflow, 2)
        assert [run["state"] for run in runs] == ["success", "success"], airflow.failures(DAG_ID, runs)
        assert named(airflow, runs[1]) == ["burst-0.json", "burst-1.json", "burst-2.json"]

        time.sleep(3 * QUIET_S)  # every file taken: nothing more starts
        assert len(on_arrival_runs(airflow)) == 2 and len(on_arrival_runs(airflow, GROUP_DAG_ID)) == 1

        # The triggerer killed: a file landing meanwhile starts one run once another triggerer
        # takes the watcher over (Airflow hands a dead triggerer's triggers on).
        restarted = airflow.kill_and_restart(airflow.component("triggerer"))
        last = arrival("after-restart", 30)
        land(locations.landing, last)
        runs = ended(airflow, 3)
        assert [run["state"] for run in runs] == ["success"] * 3, airflow.failures(DAG_ID, runs)
        assert named(airflow, runs[2]) == ["after-restart.json"]
    finally:
        if restarted is not None:
            processes.stop_group(restarted.pid, ((signal.SIGTERM, 8), (signal.SIGKILL, 5)))
        airflow.stop()

    taken = [report.input_files for report in load_reports(locations.runs) if report.input_files]
    assert taken == [1, 3, 1]  # one run took the file, one the burst, one the file after the restart
    model = ClickstreamModel()
    for files in (first, burst, last):
        model.run([all_lines(files)])
    assert table_rows(spark, locations.output) == model.rows()


def test_in_s3_a_notification_starts_a_run_and_the_listing_catches_one_lost(spark, s3_root, tmp_path):
    """clickstream in S3 (moto's server), its bucket notifying an SQS queue of each object
    created: a file landing is told (the Asset event says so) and starts one run, which takes
    it; with the notifications lost from then on, the next file is caught by the periodic
    listing and starts one run too. The table against the window model."""
    landing = Locations.resolve("clickstream", root=s3_root).landing
    queue = notifications.queue(f"landing-{s3_root.rsplit('-', 1)[1]}")
    block = {"quiet_period": f"{QUIET_S} seconds", "listing_every": f"{LISTING_S} seconds", "queue": queue}
    folder = declaration_copy(tmp_path / "pipelines", "clickstream", schedule="on_arrival", on_arrival=block)
    airflow = Scheduler(tmp_path / "home", s3_root)  # the S3 server's settings: in this environment
    airflow.env["JOBS_PIPELINES_DIR"] = str(folder)
    # A first file, which the DAG's first run (by its clock) takes: in S3 a landing with no
    # object does not exist, and a run refuses a landing that does not exist.
    before = arrival("before", -10)
    land(landing, before)
    try:
        airflow.start([DAG_ID])
        started_by_clock(airflow, [DAG_ID])
        deadline = time.monotonic() + 120
        while "clickstream" not in watched_landings(airflow):
            assert time.monotonic() < deadline, airflow.assets()
            time.sleep(1)
        time.sleep(2 * QUIET_S)  # the triggerer has started the watcher, and listed the landing once
        # (had it listed before.json before the first run took it, a run of its own took it or nothing)
        known = len(ended(airflow, 0))
        notifications.notify(landing, queue)

        told = arrival("told", 0)
        land(landing, told)
        first = ended(airflow, known + 1)[-1]
        assert first["state"] == "success" and named(airflow, first) == ["told.json"]
        assert [payload["heard_by"] for payload in said(airflow, first)] == ["notification"]
        assert "told by the bucket's notification" in airflow.task_log(DAG_ID, first["dag_run_id"], "run")

        notifications.stop(landing)  # from here on, every notification is lost
        lost = arrival("lost", 5)
        land(landing, lost)
        second = ended(airflow, known + 2, within_s=LISTING_S + 300)[-1]
        assert second["state"] == "success" and named(airflow, second) == ["lost.json"]
        assert [payload["heard_by"] for payload in said(airflow, second)] == ["listing"]
    finally:
        airflow.stop()

    locations = Locations.resolve("clickstream", root=s3_root)
    assert [report.input_files for report in load_reports(locations.runs) if report.input_files] == [1, 1, 1]
    model = ClickstreamModel()
    for files in (before, told, lost):
        model.run([all_lines(files)])
    assert table_rows(spark, locations.output) == model.rows()
