"""The backfill DAG, run for real (`airflow dags test`): a date range published with its
last windows, and bad params rejected before any Spark work."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jobs import backfill
from jobs.quality_report import page as quality_report
from tests.airflow.dag_runs import AIRFLOW, airflow_env, asset_events, at, dags_test
from tests.helpers import all_lines, event, land_in_order, modes, table_rows
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
    # A file landed outside the dt= folders: no date range selects it, and the user is told.
    land_in_order(str(root / "landing" / "clickstream"), {"undated.json": [event("u9", at(5))]})
    conf = {"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-31"}
    run = dags_test(airflow_home, str(root), "jobs_backfill", conf)
    assert run.state == "success", run.output[-5000:]
    assert "1 entries under" in run.output and "outside dt=YYYY-MM-DD folders ('undated.json')" in run.output

    model = ClickstreamModel()
    model.run([all_lines(days["dt=2023-07-30"]) + all_lines(days["dt=2023-07-31"])])
    expected = model.closed_range_rows()
    publish_to = str(root / "published" / "clickstream")
    assert table_rows(spark, backfill.current_version(publish_to)) == expected
    pointer = run.xcom("publish_backfill")
    assert pointer["rows"] == len(expected) and pointer["held_rows"] == len(model.state) > 0
    assert pointer["last_window"] == max(r[1] for r in expected).strftime("%Y-%m-%dT%H:%M:%SZ")
    # The published location is an Asset of its own, its event carrying the pointer.
    mode, expected_mode = modes(Path(publish_to) / backfill.POINTER)
    assert mode == expected_mode  # readable by its owner and group only (tests/helpers.py modes)
    (published,) = asset_events(airflow_home, f"file://{publish_to}")
    assert published["id"] == pointer["id"] and published["rows"] == len(expected)
    # The data quality report lists the backfill, its runs (the range's, then the one that ran
    # the batch closing it: no input, the held windows written) and the version it made current.
    (listed,) = quality_report.backfills(str(root), "clickstream")
    assert listed["id"] == pointer["id"] and [r.status for r in listed["runs"]] == ["succeeded"] * 2
    assert (listed["runs"][1].input_rows, listed["runs"][1].output_rows) == (0, len(model.state))
    assert listed["published"]["current"] is True and listed["published"]["publish_to"] == publish_to
    page = quality_report.render(str(root))
    assert f"{pointer['id']}</td>" in page and f"to {publish_to} <b>(current)</b>" in page
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
    assert "must be inside the root or one of JOBS_PUBLISH_ROOTS" in run.output
    assert "Spark-Submit cmd" not in run.output
    assert sorted(p.name for p in root.iterdir()) == ["landing"] and not outside.exists()

    # Any pipeline name reaches check_params, which says why it cannot be backfilled.
    for pipeline, reason in (
        ("nope", "pipeline 'nope': not declared; declared pipelines:"),
        (
            "spending_sessions",
            "pipeline 'spending_sessions': backfills cover window and events pipelines; "
            "a range leaves spending_sessions's state open",
        ),
    ):
        refused = dags_test(airflow_home, str(root), "jobs_backfill", {**conf, "pipeline": pipeline})
        assert (
            refused.tasks()["check_params"][0] == "failed" and f"rejected, nothing was run: {reason}" in refused.output
        )
        assert "Spark-Submit cmd" not in refused.output

    # A param of the wrong type is refused by the DAG's param schema before the run exists.
    bad_type = subprocess.run(
        [AIRFLOW, "dags", "test", "jobs_backfill", "--conf", json.dumps({**conf, "max_files_per_trigger": "many"})],
        env=airflow_env(airflow_home, str(root)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad_type.returncode != 0
    assert "many" in bad_type.stdout + bad_type.stderr and "Spark-Submit cmd" not in bad_type.stdout


def test_a_delta_table_s_range_is_replaced_in_the_production_table(airflow_home, tmp_path, spark):
    """rack_temperatures (Delta): four days run in production; the DAG backfills the second
    day, and its last task writes the day over the production table's in one commit."""
    from jobs import declare
    from jobs.lake import delta
    from jobs.lake.layout import Locations
    from tests.helpers import run_pipeline
    from tests.integration.test_backfill_into_table import DAYS, day_readings, land_day, model, on, rows_of

    root = tmp_path / "root"
    production = Locations.resolve("rack_temperatures", root=str(root))
    pipeline = declare.load("rack_temperatures")
    for day in DAYS[:4]:
        land_day(production, day)
        assert run_pipeline(spark, pipeline, production).status == "succeeded"
    before, versions = rows_of(production.output), delta.versions(production.output)

    run = dags_test(
        airflow_home,
        str(root),
        "jobs_backfill",
        {"pipeline": "rack_temperatures", "since": "2023-07-29", "until": "2023-07-29"},
    )

    assert run.state == "success", run.output[-5000:]
    assert run.tasks()["replace"][0] == "success" and run.tasks()["publish_backfill"][0] == "skipped"
    assert delta.versions(production.output) == [*versions, versions[-1] + 1]  # one commit
    after = rows_of(production.output)
    assert on(DAYS[1], after) == model(day_readings(DAYS[1]), hottest=150)  # the same rule: the same rows
    assert after == before
    assert "published" not in {p.name for p in root.iterdir()}
