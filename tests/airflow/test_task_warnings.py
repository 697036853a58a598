"""A run's warnings reach the pipeline DAG's task log and the data quality DAG's verdict
(the tasks' own functions, called as Airflow calls them, on stored run reports)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from jobs.lake.layout import Locations
from jobs.orchestration import factory, reports
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
        factory.verdict.function(["clickstream", "device_steps"], root)

    assert published["warnings"] == report.warnings
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned[0] == f"clickstream: {report.warnings[0]}"  # the pipeline DAG's run_report
    assert warned[1].startswith("clickstream: watermark_ahead: the watermark 9999-12-31T23:54:00Z is ")  # verdict
    assert len(warned) == 2  # device_steps never ran: nothing to say
