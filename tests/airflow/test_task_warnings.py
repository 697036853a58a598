"""A run's warnings reach the pipeline DAG's task log and the data quality DAG's verdict
(the tasks' own functions, called as Airflow calls them, on stored run reports)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from jobs.lake.layout import Locations
from jobs.orchestration import quality_dag, reports
from jobs.run.report import RunReport, save


def test_a_run_s_warnings_are_in_the_task_log_its_xcom_and_the_quality_verdict(tmp_path, caplog):
    root = str(tmp_path / "root")
    started = datetime.now(UTC) - timedelta(minutes=5)
    report = RunReport(
        run_id=f"{started:%Y%m%dT%H%M%SZ}-abcdef",
        pipeline="clickstream",
        trigger="available-now",
        started_at=started.isoformat(timespec="seconds"),
        status="succeeded",
        watermark="9999-12-31T23:54:00Z",
        warnings=["watermark_ahead: the watermark 9999-12-31T23:54:00Z is far ahead of now"],
    )
    save(report, Locations.resolve("clickstream", root=root).runs)

    with caplog.at_level(logging.INFO, logger="jobs.orchestration"):
        published = reports.run_report.function("clickstream", root, report.run_id)
        quality_dag.verdict.function(["clickstream", "device_steps"], root)

    assert published["warnings"] == report.warnings
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned[0] == f"clickstream: {report.warnings[0]}"  # the pipeline DAG's run_report
    assert warned[1].startswith("clickstream: watermark_ahead: the watermark 9999-12-31T23:54:00Z is ")  # verdict
    assert len(warned) == 2  # device_steps never ran: nothing to say


def test_a_dag_run_past_its_deadline_is_said_by_the_callback_as_the_triggerer_calls_it(caplog):
    """What the triggerer runs when the scheduler finds a pipeline's DAG run past its deadline
    (the whole path, under a running Airflow: tests/airflow/test_cascade.py)."""
    import asyncio

    from jobs.orchestration.deadlines import overran

    run = {"dag_run_id": "asset_triggered__2026-11-29T17:00:00+00:00", "queued_at": "2026-11-29T17:00:00Z"}
    with caplog.at_level(logging.WARNING, logger="jobs.orchestration"):
        said = asyncio.run(overran("jobs_clickstream", 5400, context={"dag_run": {**run, "state": "running"}}))
    assert said == (
        f"jobs_clickstream: DAG run {run['dag_run_id']} (queued 2026-11-29T17:00:00Z) overran its deadline of "
        "1.5 h; it was running then"
    )
    assert [r.getMessage() for r in caplog.records] == [said]
    assert asyncio.run(overran("jobs_clickstream", 60)).startswith("jobs_clickstream: DAG run ? (queued ?)")
