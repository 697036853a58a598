"""Freshness in a real Airflow: the data quality DAG records (its task log, the XCom `late`)
and alerts (its task `freshness` fails) each table no run appended rows to within its
freshness, a silent pipeline's and a paused one's alike; a fresh table is not named."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from jobs.history import log
from jobs.lake.layout import Locations
from jobs.run.report import save
from jobs.units import duration
from jobs.validate.result import ValidationResult, save_result
from tests.airflow.dag_runs import dags_test
from tests.helpers import declaration_copy, finished_run


def _history(now: datetime, root: str, pipeline: str, runs: list[tuple[float, int]]) -> None:
    """Runs (hours ago, output rows) in the pipeline's run reports and event log, and a table
    check covering them (nothing for the DAG to validate: no Spark in this test)."""
    locations = Locations.resolve(pipeline, root=root)
    reports = []
    for number, (hours_ago, output_rows) in enumerate(runs):
        report = finished_run(now, pipeline, number, hours_ago, output_rows)
        save(report, locations.runs)
        log.record_run(report, locations, None)
        reports.append(report)
    check = ValidationResult(
        pipeline=pipeline,
        scope="table",
        validation_id=f"table-{now:%Y%m%dT%H%M%SZ}",
        run_ids=[r.run_id for r in reports],
        validated_at=now.isoformat(),
    )
    save_result(check, locations.runs)


def test_the_quality_dag_records_and_alerts_each_table_past_its_freshness(airflow_home, tmp_path):
    folder = tmp_path / "pipelines"
    declaration_copy(folder, "clickstream", freshness="1 hour")  # silent: its runs since appended nothing
    declaration_copy(folder, "device_steps")  # paused: no run for 3 h (@hourly: late after 2 h)
    declaration_copy(folder, "ad_clicks", freshness="1 hour")  # fresh
    root = str(tmp_path / "root")
    now = datetime.now(UTC).replace(microsecond=0)
    _history(now, root, "clickstream", [(4, 120), (1, 0), (0.2, 0)])
    _history(now, root, "device_steps", [(3, 15)])
    _history(now, root, "ad_clicks", [(0.5, 9)])

    run = dags_test(airflow_home, root, "jobs_data_quality", JOBS_PIPELINES_DIR=str(folder))
    tasks = run.tasks()
    assert run.state == "failed" and tasks["freshness"][0] == "failed", run.output[-5000:]
    assert {t: s for t, (s, _) in tasks.items() if t != "freshness"} == {
        "validate_clickstream": "skipped",  # nothing appended since their check: no Spark
        "validate_device_steps": "skipped",
        "validate_ad_clicks": "skipped",
        "data_docs": "success",
        "verdict": "success",
    }
    late = {entry["pipeline"]: entry for entry in run.xcom("freshness", key="late")}
    assert sorted(late) == ["clickstream", "device_steps"]
    assert (late["clickstream"]["freshness_s"], late["clickstream"]["declared"]) == (3600, True)
    assert (late["device_steps"]["freshness_s"], late["device_steps"]["declared"]) == (7200, False)
    ended = now - timedelta(hours=4) + timedelta(minutes=1)
    assert datetime.fromisoformat(late["clickstream"]["last_append"]) == ended
    checked = datetime.fromisoformat(late["clickstream"]["checked_at"])
    assert late["clickstream"]["age_s"] == (checked - ended).total_seconds()
    age = duration(late["clickstream"]["age_s"])
    assert f"clickstream is late: no rows appended for {age}, freshness 1.0 h (its last append: " in run.output
    assert "2 table(s) past their freshness: clickstream, device_steps" in run.output
    # The report the DAG rebuilt shows them late, first.
    page = (tmp_path / "root" / "reports" / "index.html").read_text()
    assert page.index('data-pipeline="clickstream" data-status="late"') < page.index('data-pipeline="ad_clicks"')
