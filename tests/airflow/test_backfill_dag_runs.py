"""The backfill DAG, run for real (`airflow dags test`): a date range published with its
last windows, and bad params rejected before any Spark work."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jobs import backfill
from tests.airflow.dag_runs import AIRFLOW, airflow_env, at, dags_test
from tests.helpers import all_lines, event, land_in_order, table_rows
from tests.model import ClickstreamModel

pytestmark = pytest.mark.slow


def landed_days(root: Path) -> dict[str, dict[str, list[str]]]:
    days = {}
    for day, folder in enumerate(["dt=2023-07-30", "dt=2023-07-31", "dt=2023-08-01"]):
        base = day * 24 * 60
        days[folder] = {
            f"{folder}-{i}.json": [event(f"u{j % 2}", at(base + 2 * i + j)) for j in range(4)] for i in range(2)
        }
        land_in_order(str(root / "landing" / "clickstream" / folder), days[folder])
    return days


def test_a_backfill_publishes_every_window_of_its_range(airflow_home, tmp_path, spark):
    root = tmp_path / "root"
    days = landed_days(root)
    conf = {"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-31"}
    run = dags_test(airflow_home, str(root), "jobs_backfill", conf)
    assert run.state == "success", run.output[-5000:]

    model = ClickstreamModel()
    model.run([all_lines(days["dt=2023-07-30"]) + all_lines(days["dt=2023-07-31"])])
    expected = model.closed_range_rows()
    publish_to = str(root / "published" / "clickstream")
    assert table_rows(spark, backfill.current_version(publish_to)) == expected
    pointer = run.xcom("publish_backfill")
    assert pointer["rows"] == len(expected) and pointer["held_rows"] == len(model.state) > 0
    assert pointer["last_window"] == max(r[1] for r in expected).strftime("%Y-%m-%dT%H:%M:%SZ")
    # Production checkpoint and table untouched: they were never created.
    assert sorted(p.name for p in root.iterdir()) == ["backfills", "landing", "published"]


def test_bad_backfill_params_are_rejected_before_any_spark_work(airflow_home, tmp_path):
    root = tmp_path / "root"
    landed_days(root)
    outside = tmp_path / "elsewhere"
    conf = {"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-31", "publish_to": str(outside)}
    run = dags_test(airflow_home, str(root), "jobs_backfill", conf)
    assert run.state == "failed"
    assert run.tasks()["check_params"][0] == "failed"
    assert {run.tasks()[t][0] for t in ("reprocess", "validate", "publish_backfill")} == {"upstream_failed"}
    assert "must be inside one of the configured roots" in run.output
    assert "Spark-Submit cmd" not in run.output
    assert sorted(p.name for p in root.iterdir()) == ["landing"] and not outside.exists()

    # A param of the wrong type is refused by the DAG's param schema before the run exists.
    bad_type = subprocess.run(
        [AIRFLOW, "dags", "test", "jobs_backfill", "--conf", json.dumps({"pipeline": "nope"})],
        env=airflow_env(airflow_home, str(root)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad_type.returncode != 0
    assert "nope" in bad_type.stdout + bad_type.stderr and "Spark-Submit cmd" not in bad_type.stdout
