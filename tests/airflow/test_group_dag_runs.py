"""A group DAG under Airflow (`airflow dags test jobs_group_small`): four pipelines of a
declared group in one spark-submit, each validated in it; a member refused there (its lock
taken) runs again on its own; an Asset event per member that appended rows, counted in
the metadata DB; then a DAG run with nothing new that starts no Spark."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from demo import samples
from jobs import declare
from jobs.lake.layout import Locations
from jobs.lake.locks import checkpoint_lock
from jobs.run.report import load_report, load_reports
from jobs.validate.result import load_results
from tests.airflow.dag_runs import asset_events, dags_test
from tests.helpers import all_lines, assert_run_matches, declaration_copy, land
from tests.model import ClickstreamModel, DeviceStepsModel, RackTemperaturesModel, SpendingSessionsModel

pytestmark = pytest.mark.slow

MODELS = {
    "clickstream": ClickstreamModel,
    "device_steps": DeviceStepsModel,
    "rack_temperatures": RackTemperaturesModel,
    "spending_sessions": SpendingSessionsModel,
}
LOCKED = "device_steps"


def _landed(name: str) -> dict[str, list[str]]:
    """Two sample arrivals at once: enough for every member to close a window."""
    first, second = samples.arrivals(name)[:2]
    return {**first, **second}


def _hold_lock_until_refused(locations: Locations, released: threading.Event):
    """Holds LOCKED's checkpoint lock until the group's run of it has been refused."""
    held = threading.Event()

    def hold() -> None:
        with checkpoint_lock(locations.ledger, LOCKED):
            held.set()
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                if Path(locations.runs).exists() and any(r.status == "refused" for r in load_reports(locations.runs)):
                    break
                time.sleep(0.1)
        released.set()

    threading.Thread(target=hold, daemon=True).start()
    held.wait(30)


def test_a_group_dag_runs_its_members_in_one_application_and_reruns_the_refused_one(airflow_home, tmp_path):
    root = str(tmp_path / "root")
    folder = tmp_path / "pipelines"
    for name in MODELS:
        declaration_copy(folder, name, group="small")
        land(Locations.resolve(name, root=root).landing, _landed(name))
    env = {"JOBS_PIPELINES_DIR": str(folder)}
    released = threading.Event()
    _hold_lock_until_refused(Locations.resolve(LOCKED, root=root), released)

    first = dags_test(airflow_home, root, "jobs_group_small", **env)

    assert first.state == "success", first.output[-5000:]
    assert released.is_set()
    tasks = first.tasks()
    assert tasks["run"][0] == tasks["members_to_rerun"][0] == tasks["rerun"][0] == "success"
    assert tasks["run_reports"][0] == tasks["members_verdict"][0] == "success"
    group_run = first.xcom("run")
    assert group_run["rerun"] == [LOCKED]
    assert group_run["members"][LOCKED]["status"] == "refused"
    published = first.xcom("run_reports")
    assert published[LOCKED]["run_id"] == f"{group_run['run_id']}.r1"  # its rerun, on its own
    for name, model_class in MODELS.items():
        locations = Locations.resolve(name, root=root)
        report = load_report(locations.runs, published[name]["run_id"])
        assert report.status == "succeeded"
        expected = model_class().run([all_lines(_landed(name))])
        assert_run_matches(report, expected)
        assert expected.emitted  # each appends rows, so each has an Asset event
        assert {r.validation_id: r.status for r in load_results(locations.runs)}[report.run_id] != "failed"
        assert published[name]["validation"] in ("passed", "warned")
        # One event per member, from the group's alias, on the table's own Asset.
        events = asset_events(airflow_home, f"file://{locations.output}")
        assert [e["run_id"] for e in events] == [report.run_id], name
    in_group = [load_report(Locations.resolve(n, root=root).runs, group_run["run_id"]) for n in MODELS if n != LOCKED]
    assert len({report.spark_log for report in in_group}) == 1  # the three that ran in it: one application

    again = dags_test(airflow_home, root, "jobs_group_small", **env)

    assert again.state == "success", again.output[-5000:]
    assert "nothing new for any member: running them here, without Spark" in again.output
    assert again.tasks()["rerun"][0] == "skipped"
    for name in MODELS:
        locations = Locations.resolve(name, root=root)
        assert len(asset_events(airflow_home, f"file://{locations.output}")) == 1  # no rows, no event
        assert load_reports(locations.runs)[-1].batches == 0
    assert declare.load("clickstream").group is None  # the shipped declarations name no group
