"""A chain under a running Airflow (scheduler, DAG processor, triggerer, API server): raw_clicks
declared `schedule: on_arrival`, clicks_per_minute reading its table, `schedule: on_upstream`.
Two files landed at the top, the second moving the watermark past the first's windows, reach
the bottom table through the cascade without a clock: each upstream run that appended rows
updates its table's Asset, and each such event starts one run of the reader. The bottom
table against the window model; the time from a landing to its rows at the bottom is printed.
The reader's deadline is shorter than any run: each of its DAG runs is recorded overrunning it."""

from __future__ import annotations

import sqlite3
import time
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from infra.airflow.running import Scheduler
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.airflow.test_on_arrival import T0, ended, started_by_clock
from tests.airflow.test_on_arrival import on_arrival_runs as asset_runs
from tests.helpers import event, land, table_rows
from tests.integration.test_table_sources import PER_MINUTE, RAW
from tests.model import WindowModel, clickstream_reading

pytestmark = pytest.mark.slow

TOP, BOTTOM = f"jobs_{RAW['name']}", f"jobs_{PER_MINUTE['name']}"
QUIET_S = 2
DEADLINE_S = 3  # the reader's: its spark-submit alone takes longer


def overruns(home: Path) -> list[tuple[str, str, str | None]]:
    """Each DAG run Airflow recorded as past its deadline: (DAG, its callback's state and output)."""
    with sqlite3.connect(home / "airflow.db") as db:
        return db.execute(
            "select r.dag_id, c.state, c.output from deadline d join dag_run r on r.id = d.dagrun_id "
            "join callback c on c.id = d.callback_id where d.missed order by r.id"
        ).fetchall()


def declared(folder: Path) -> tuple[Path, Path]:
    """The chain's declarations and a suite for each table (every table needs one)."""
    pipelines, suites = folder / "pipelines", folder / "expectations"
    quick = {"quiet_period": f"{QUIET_S} seconds", "listing_every": "1 second"}
    top = {**RAW, "schedule": "on_arrival", "on_arrival": quick}
    bottom = {**PER_MINUTE, "schedule": "on_upstream", "airflow": {"deadline": f"{DEADLINE_S} seconds"}}
    for raw, column in ((top, "user_id"), (bottom, "window_end")):
        suite = {"table": raw["name"], "expectations": [{"expect": "column_values_to_not_be_null", "column": column}]}
        for where, text in ((pipelines, raw), (suites, suite)):
            where.mkdir(parents=True, exist_ok=True)
            (where / f"{raw['name']}.yaml").write_text(yaml.safe_dump(text))
    return pipelines, suites


def minute_of(name: str, minute: int) -> dict[str, list[str]]:
    at = T0 + timedelta(minutes=minute)
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return {
        f"{name}.json": [
            event(f"u{i % 2}", (at + timedelta(seconds=7 * i)).strftime(stamp), f"{name}-{i}") for i in range(6)
        ]
    }


def test_two_files_landed_at_the_top_flow_down_the_chain_one_reader_run_per_upstream_event(spark, tmp_path):
    pipelines, suites = declared(tmp_path)
    root = tmp_path / "root"
    top = Locations.resolve(RAW["name"], root=str(root))
    Path(top.landing).mkdir(parents=True)
    airflow = Scheduler(tmp_path / "home", root)
    airflow.env |= {"JOBS_PIPELINES_DIR": str(pipelines), "JOBS_EXPECTATIONS_DIR": str(suites)}
    cascades = []
    try:  # started inside: a start that fails part way is stopped too
        airflow.start([TOP, BOTTOM])
        started_by_clock(airflow, [TOP])  # the top's clock run: nothing landed, no Asset event
        assert asset_runs(airflow, BOTTOM) == []
        time.sleep(3 * QUIET_S)
        files = [minute_of("first", 0), minute_of("second", 10)]
        for number, landed in enumerate(files, start=1):
            started = time.monotonic()
            land(top.landing, landed)
            runs = ended(airflow, number, BOTTOM)
            cascades.append(time.monotonic() - started)
            assert [run["state"] for run in runs] == ["success"] * number
            (event,) = airflow.triggering_events(BOTTOM, runs[-1]["dag_run_id"])  # one upstream event, one run
            assert event["source_dag_id"] == TOP and event["extra"]["output_rows"] == 6
        time.sleep(3 * QUIET_S)  # nothing more: every event made one run
        assert len(asset_runs(airflow, BOTTOM)) == 2 and len(asset_runs(airflow, TOP)) == 2
        # Each reader run overran: the scheduler recorded it, the triggerer's callback said it.
        waited = time.monotonic() + 60
        while [state for _, state, _ in overruns(airflow.home)] != ["success", "success"]:
            assert time.monotonic() < waited, overruns(airflow.home)
            time.sleep(1)
        for (dag_id, _, said), run in zip(overruns(airflow.home), asset_runs(airflow, BOTTOM), strict=True):
            assert dag_id == BOTTOM and said.startswith(f"{BOTTOM}: DAG run {run['dag_run_id']} (queued ")
            assert f"overran its deadline of {DEADLINE_S} s; it was running then" in said
    finally:
        airflow.stop()
    print(f"cascade, landing to the bottom run's end: {', '.join(f'{s:.1f} s' for s in cascades)}")

    bottom = Locations.resolve(PER_MINUTE["name"], root=str(root))
    reads = [r.input_rows for r in load_reports(bottom.runs) if r.input_rows]
    assert reads == [6, 6]
    model = WindowModel(
        read=clickstream_reading,
        finish=lambda values: (len(values),),
        delay=timedelta(minutes=5),
        window=timedelta(minutes=1),
    )
    for landed in files:
        model.run([lines for lines in landed.values()])
    assert model.rows() and table_rows(spark, bottom.output) == model.rows()
