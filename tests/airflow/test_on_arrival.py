"""Run on arrival, under a running Airflow (scheduler, DAG processor, triggerer and API
server, as `make airflow` starts them): clickstream declared `schedule: on_arrival`. An idle
landing starts no run; a file landing starts exactly one, which takes it; a burst of files
makes one run; each run's Asset event names the files; a triggerer killed and replaced
loses no landing. The table against the window model."""

from __future__ import annotations

import re
import signal
import time
from datetime import UTC, datetime, timedelta

import pytest

from infra import processes
from infra.airflow.running import Scheduler
from jobs.declare.load import pipelines_dir
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.helpers import all_lines, event, land, table_rows
from tests.model import ClickstreamModel

pytestmark = pytest.mark.slow

DAG_ID = "jobs_clickstream"
QUIET_S = 4
T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)


def arrival(name: str, minute: int) -> dict[str, list[str]]:
    at = T0 + timedelta(minutes=minute)
    lines = [
        event(f"u{i % 2}", (at + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ"), f"{name}-{i}") for i in range(4)
    ]
    return {f"{name}.json": lines}


def test_files_landing_start_one_run_a_burst_one_and_an_idle_landing_none(spark, tmp_path):
    declared = (pipelines_dir() / "clickstream.yaml").read_text()
    on_arrival = f"schedule: on_arrival\non_arrival: {{quiet_period: {QUIET_S} seconds, listing_every: 1 second}}"
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "clickstream.yaml").write_text(
        re.sub(r"^schedule: .*$", on_arrival, declared, flags=re.M)
    )
    root = tmp_path / "root"
    locations = Locations.resolve("clickstream", root=str(root))
    (root / "landing" / "clickstream").mkdir(parents=True)
    airflow = Scheduler(tmp_path / "home", root)
    airflow.env["JOBS_PIPELINES_DIR"] = str(tmp_path / "pipelines")

    def on_arrival_runs() -> list[dict]:
        return [run for run in airflow.runs(DAG_ID) if run["run_type"] == "asset_triggered"]

    def ended(count: int, within_s: float = 300) -> list[dict]:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            runs = on_arrival_runs()
            if len(runs) >= count and all(run["state"] in ("success", "failed") for run in runs):
                return runs
            time.sleep(1)
        raise AssertionError(f"{count} on-arrival run(s) had not ended within {within_s} s: {on_arrival_runs()}")

    def named(run: dict) -> list[str]:
        events = airflow.triggering_events(DAG_ID, run["dag_run_id"])
        return sorted(name for e in events for name in e["extra"]["payload"]["named"])

    airflow.start([DAG_ID])
    restarted = None
    try:
        # Unpaused, the DAG runs once by its `at_least_every` clock; then an idle landing starts nothing.
        deadline = time.monotonic() + 300
        while not any(run["state"] in ("success", "failed") for run in airflow.runs(DAG_ID)):
            assert time.monotonic() < deadline, airflow.runs(DAG_ID)
            time.sleep(1)
        time.sleep(3 * QUIET_S)
        assert on_arrival_runs() == []

        first = arrival("first", 0)
        land(locations.landing, first)
        runs = ended(1)
        assert [run["state"] for run in runs] == ["success"]
        assert named(runs[0]) == ["first.json"]

        burst = {}
        for number in range(3):  # closer together than the quiet period: one run
            burst |= arrival(f"burst-{number}", 5 + 5 * number)
            land(locations.landing, {f"burst-{number}.json": burst[f"burst-{number}.json"]})
            time.sleep(1)
        runs = ended(2)
        assert [run["state"] for run in runs] == ["success", "success"]
        assert named(runs[1]) == ["burst-0.json", "burst-1.json", "burst-2.json"]

        time.sleep(3 * QUIET_S)  # every file taken: nothing more starts
        assert len(on_arrival_runs()) == 2

        # The triggerer killed: a file landing meanwhile starts one run once another triggerer
        # takes the watcher over (Airflow hands a dead triggerer's triggers on).
        triggerers = [p for p in airflow.group() if "airflow triggerer" in " ".join(p.cmdline())]
        (triggerer,) = [p for p in triggerers if p.ppid() not in {t.pid for t in triggerers}]  # not its runner
        restarted = airflow.kill_and_restart(triggerer)
        last = arrival("after-restart", 30)
        land(locations.landing, last)
        runs = ended(3)
        assert [run["state"] for run in runs] == ["success"] * 3
        assert named(runs[2]) == ["after-restart.json"]
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
