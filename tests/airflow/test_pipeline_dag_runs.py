"""The pipeline DAG, run for real (`airflow dags test`): a killed run task retried from the
checkpoint, a second run on new files, and the data quality DAG over that table."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from jobs import declare
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.airflow.dag_runs import arrivals, asset_events, batches_as_spark_ran, dags_test, kill_the_run_after
from tests.helpers import all_lines, land_in_order, modes, replace_parquet_file, table_rows
from tests.model import ClickstreamModel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipeline_runs(airflow_home, tmp_path_factory, spark):
    """Two scheduled-DAG runs on one root: the first killed mid-run and retried, the
    second after more files landed."""
    root = tmp_path_factory.mktemp("pipeline_dag") / "root"
    landing = str(root / "landing" / "clickstream")
    first_files, second_files = arrivals(0, 5), arrivals(5, 3)
    land_in_order(landing, first_files)
    killed: list[int] = []
    watch = kill_the_run_after(root / "checkpoints" / "clickstream", root, killed)
    first = dags_test(airflow_home, str(root), "jobs_clickstream", {"max_files_per_trigger": 1}, watch)
    first.table = table_rows(spark, str(root / "tables" / "clickstream"))
    first.reports = load_reports(Locations.resolve("clickstream", root=str(root)).runs)
    land_in_order(landing, second_files)
    # The second with lineage: Airflow's OpenLineage provider and the run send to one file.
    lineage = {
        "OPENLINEAGE__TRANSPORT__TYPE": "file",
        "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(root.parent / "lineage.jsonl"),
        "OPENLINEAGE__TRANSPORT__APPEND": "true",
    }
    second = dags_test(airflow_home, str(root), "jobs_clickstream", {"max_files_per_trigger": 1}, **lineage)
    return root, first_files, second_files, first, second, killed


def test_a_killed_run_task_is_retried_and_resumes_from_the_checkpoint(pipeline_runs):
    root, first_files, _, first, _, killed = pipeline_runs
    assert killed, "the run finished before its driver could be killed"
    assert first.state == "success", first.output[-5000:]
    tasks = first.tasks()
    assert tasks["run"] == ("success", 2), "the killed try failed, the retry succeeded"
    assert tasks["validate"][0] == tasks["run_report"][0] == "success"

    model = ClickstreamModel()
    model.run(batches_as_spark_ran(Locations.resolve("clickstream", root=str(root)), first_files, first.reports))
    assert first.table == model.rows()  # no duplicate, no loss
    reports = first.reports
    assert sum(r.input_rows for r in reports) == len(all_lines(first_files))
    published = first.xcom("run_report")
    # One unusable line in 12 is above the suite's 5% quarantine share: a warning, not a failure.
    assert published["status"] == "succeeded" and published["validation"] == "warned"
    assert published["run_id"] == first.xcom("run") == reports[-1].run_id


def test_a_second_dag_run_processes_only_the_new_files(pipeline_runs, spark):
    root, first_files, second_files, first, second, _ = pipeline_runs
    assert second.state == "success", second.output[-5000:]
    published = second.xcom("run_report")
    assert published["input_files"] == len(second_files)
    assert published["input_rows"] == len(all_lines(second_files))
    model = ClickstreamModel()
    model.run(batches_as_spark_ran(Locations.resolve("clickstream", root=str(root)), first_files, first.reports))
    expected = model.run(list(second_files.values()))
    assert published["output_rows"] == len(expected.emitted)
    assert published["late_rows_dropped"] == expected.late_rows_dropped > 0
    assert table_rows(spark, str(root / "tables" / "clickstream")) == model.rows()
    # The run report is in the task log too.
    assert f'"run_id": "{published["run_id"]}"' in second.output
    # The run report links the Airflow task that ran it (the data quality report shows the link).
    (report,) = [
        r
        for r in load_reports(Locations.resolve("clickstream", root=str(root)).runs)
        if r.run_id == published["run_id"]
    ]
    assert (
        f"/dags/jobs_clickstream/runs/{second.run_id.replace('+', '%2B').replace(':', '%3A')}/tasks/run" in report.link
    )
    # Spark's log of that run is a file of the task's own, which the report names.
    spark_log = Path(report.spark_log)
    assert spark_log.parts[-4:-2] == ("airflow", "jobs_clickstream") and spark_log.name == "run.1.log"
    assert spark_log.is_file() and str(spark_log) not in {r.spark_log for r in first.reports}

    # Its lineage: the run (through spark-submit) is the child of the task's OpenLineage run.
    sent = [json.loads(line) for line in (root.parent / "lineage.jsonl").read_text().splitlines()]
    ours = [e for e in sent if e["job"]["name"] == "clickstream"]
    assert [e["eventType"] for e in ours] == ["START", "COMPLETE"]
    assert ours[1]["run"]["facets"]["triggerOnce_account"]["runId"] == published["run_id"]
    parent = ours[1]["run"]["facets"]["parent"]
    assert (parent["job"]["name"], parent["root"]["job"]["name"]) == ("jobs_clickstream.run", "jobs_clickstream")
    # The provider's own events of the task name the same run: a lineage server nests ours in it.
    (task,) = {e["run"]["runId"] for e in sent if e["job"]["name"] == "jobs_clickstream.run"}
    assert parent["run"]["runId"] == task


def test_the_data_quality_dag_fails_on_a_broken_table_and_still_rebuilds_the_docs(pipeline_runs, airflow_home, spark):
    root = pipeline_runs[0]
    # Break the table: a committed file gets a row with a null user_id.
    committed = sorted((root / "tables" / "clickstream").glob("window_date=*/*.parquet"))[0]
    rows = spark.read.parquet(str(committed)).toPandas()
    broken = rows.iloc[[0]].assign(user_id=None)
    replace_parquet_file(spark, committed, pd.concat([rows, broken], ignore_index=True))

    run = dags_test(airflow_home, str(root), "jobs_data_quality")
    assert run.state == "failed"
    tasks = run.tasks()
    assert tasks["validate_clickstream"][0] == "failed"
    # The pipelines that never ran are skipped without starting Spark: one spark-submit in all.
    others = {
        task: state
        for task, (state, _) in tasks.items()
        if task.startswith("validate_") and task != "validate_clickstream"
    }
    assert len(others) == len(declare.load_all()) - 1 and set(others.values()) == {"skipped"}
    assert run.output.count("Spark-Submit cmd") == 1
    assert tasks["data_docs"][0] == "success" and tasks["verdict"][0] == "upstream_failed"
    assert "user_id: 1 of" in run.output  # the failed check, named in the task log
    assert "great_expectations" not in run.output  # none of its INFO workings in the task logs
    assert (root / "reports" / "index.html").exists() and (root / "reports" / "data_docs" / "index.html").exists()
    # Readable by their owner and group only: they hold producers' values (the umask may allow less).
    written = [root / "reports" / "index.html", *(root / "runs" / "clickstream").glob("*.json")]
    written += [*(root / "reports" / "data_docs").rglob("*.html"), *(root / "quarantine").rglob("*.json")]
    expected_mode = modes(written[0])[1]
    assert {path.name: modes(path)[0] for path in written} == dict.fromkeys((p.name for p in written), expected_mode)


def test_nothing_new_costs_no_validation_and_no_asset_event_and_the_quality_dag_skips_unchanged_tables(
    pipeline_runs, airflow_home
):
    root = pipeline_runs[0]
    table = f"file://{root}/tables/clickstream"
    events = asset_events(airflow_home, table)
    assert len(events) == 2  # one per DAG run that appended rows, with its report
    assert [e["output_rows"] > 0 for e in events] == [True, True]

    quiet = dags_test(airflow_home, str(root), "jobs_clickstream")
    assert quiet.state == "success", quiet.output[-5000:]
    tasks = quiet.tasks()
    assert tasks["run"][0] == "success" and tasks["run_report"][0] == "success"
    assert tasks["validate"][0] == tasks["table_updated"][0] == "skipped"
    assert "Spark-Submit cmd" not in quiet.output  # nothing new: the run task ran it in its own process
    assert "pending: nothing new landed; Spark is not started" in quiet.output
    published = quiet.xcom("run_report")  # the run is still reported, its report checked
    assert (published["input_files"], published["output_rows"], published["validation"]) == (0, 0, "passed")
    assert asset_events(airflow_home, table) == events

    # The last table check (the failed one above) covers every run that appended rows.
    unchanged = dags_test(airflow_home, str(root), "jobs_data_quality")
    assert unchanged.tasks()["validate_clickstream"][0] == "skipped"
    assert "Spark-Submit cmd" not in unchanged.output
    assert "unchanged: no run of clickstream appended rows since table check table-" in unchanged.output

    forced = dags_test(airflow_home, str(root), "jobs_data_quality", {"revalidate": True})
    assert forced.tasks()["validate_clickstream"][0] == "failed"  # still broken, checked again
    assert forced.output.count("Spark-Submit cmd") == 1
