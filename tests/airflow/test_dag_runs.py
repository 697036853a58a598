"""Real `airflow dags test` runs: SQLite metadata DB, real spark-submit, real data.

Each run takes about a minute (Airflow, then a JVM per Spark task), so the cases are few
and each checks a lot.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import psutil
import pytest

from jobs import backfill
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.airflow.conftest import AIRFLOW, airflow_env
from tests.helpers import (
    S3_BUCKET,
    S3_SECRET,
    all_lines,
    event,
    land,
    land_in_order,
    replace_parquet_file,
    table_rows,
)
from tests.model import ClickstreamModel

pytestmark = pytest.mark.slow

T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def arrivals(first: int, count: int) -> dict[str, list[str]]:
    """`count` files, 4 minutes of events each, with a late and an unusable row."""
    return {
        f"part-{i}.json": [event(f"u{j % 3}", at(4 * i + 0.3 * j)) for j in range(10)]
        + [event("late", at(4 * i - 12)), "{unusable"]
        for i in range(first, first + count)
    }


@dataclass
class DagRun:
    run_id: str
    state: str
    output: str
    home: Path
    dag_id: str
    table: list[tuple] | None = None  # filled in by tests that read the table after the run
    reports: list[dict] | None = None

    def tasks(self) -> dict[str, tuple[str, int]]:
        """task_id -> (state, try_number), from the metadata DB."""
        with sqlite3.connect(self.home / "airflow.db") as db:
            rows = db.execute(
                "select task_id, state, try_number from task_instance where dag_id = ? and run_id = ?",
                (self.dag_id, self.run_id),
            ).fetchall()
        return {task: (state, tries) for task, state, tries in rows}

    def xcom(self, task_id: str):
        with sqlite3.connect(self.home / "airflow.db") as db:
            (value,) = db.execute(
                "select value from xcom where dag_id = ? and run_id = ? and task_id = ? and key = 'return_value'",
                (self.dag_id, self.run_id, task_id),
            ).fetchone()
        return json.loads(value)


def dags_test(
    home: Path,
    root: str,
    dag_id: str,
    conf: dict | None = None,
    watch: Callable[[subprocess.Popen], None] | None = None,
    **env: str,
) -> DagRun:
    log = home / f"{dag_id}-{time.monotonic_ns()}.log"
    command = [AIRFLOW, "dags", "test", dag_id, *(["--conf", json.dumps(conf)] if conf else [])]
    started = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(command, env=airflow_env(home, root, **env), stdout=out, stderr=subprocess.STDOUT)
        if watch:
            watch(process)
        process.wait(timeout=900)
    output = log.read_text()
    print(f"airflow dags test {dag_id}: {time.monotonic() - started:.0f}s")
    finished = [line for line in output.splitlines() if "DagRun Finished" in line]
    assert finished, output[-5000:]
    fields = dict(part.split("=", 1) for part in finished[-1].replace(",", " ").split() if "=" in part)
    return DagRun(fields["run_id"], fields["state"], output, home, dag_id)


def kill_the_run_after(checkpoint: Path, root: Path, killed: list[int]) -> Callable[[subprocess.Popen], None]:
    """Kills the Spark driver of the run task (SIGKILL, no clean-up) once batch 1 committed."""

    def watch(process: subprocess.Popen) -> None:
        deadline = time.monotonic() + 600
        while process.poll() is None and not killed and time.monotonic() < deadline:
            if (checkpoint / "commits" / "1").exists():
                for candidate in psutil.process_iter(["cmdline"]):
                    line = candidate.info["cmdline"] or []
                    is_driver = line and "python" in Path(line[0]).name and any("spark_submit.py" in a for a in line)
                    if is_driver and f"--root={root}" in line and "run" in line:
                        candidate.kill()
                        killed.append(candidate.pid)
            time.sleep(0.05)

    return watch


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
    second = dags_test(airflow_home, str(root), "jobs_clickstream", {"max_files_per_trigger": 1})
    return root, first_files, second_files, first, second, killed


def test_a_killed_run_task_is_retried_and_resumes_from_the_checkpoint(pipeline_runs):
    _, first_files, _, first, _, killed = pipeline_runs
    assert killed, "the run finished before its driver could be killed"
    assert first.state == "success", first.output[-5000:]
    tasks = first.tasks()
    assert tasks["run"] == ("success", 2), "the killed try failed, the retry succeeded"
    assert tasks["validate"][0] == tasks["publish_report"][0] == "success"

    model = ClickstreamModel()
    model.run(list(first_files.values()))
    assert first.table == model.rows()  # no duplicate, no loss
    reports = first.reports
    assert sum(r.input_rows for r in reports) == len(all_lines(first_files))
    published = first.xcom("publish_report")
    # One unusable line in 12 is above the suite's 5% quarantine share: a warning, not a failure.
    assert published["status"] == "succeeded" and published["validation"] == "warned"
    assert published["run_id"] == first.xcom("run") == reports[-1].run_id


def test_a_second_dag_run_processes_only_the_new_files(pipeline_runs, spark):
    root, first_files, second_files, _, second, _ = pipeline_runs
    assert second.state == "success", second.output[-5000:]
    published = second.xcom("publish_report")
    assert published["input_files"] == len(second_files)
    assert published["input_rows"] == len(all_lines(second_files))
    model = ClickstreamModel()
    model.run(list(first_files.values()))
    expected = model.run(list(second_files.values()))
    assert published["output_rows"] == len(expected.emitted)
    assert published["late_rows_dropped"] == expected.late_rows_dropped > 0
    assert table_rows(spark, str(root / "tables" / "clickstream")) == model.rows()
    # The run report is in the task log too.
    assert f'"run_id": "{published["run_id"]}"' in second.output


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
    assert tasks["data_docs"][0] == "success" and tasks["verdict"][0] == "upstream_failed"
    assert "user_id: 1 of" in run.output  # the failed check, named in the task log
    assert (root / "reports" / "index.html").exists() and (root / "reports" / "data_docs" / "index.html").exists()


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


def test_a_dag_run_on_s3_takes_its_credentials_from_an_airflow_connection(airflow_home, s3_endpoint, s3_root, spark):
    """No AWS_* variable in Airflow's environment: the credentials come from the connection
    aws_default, and the secret appears nowhere in the output, the logs or the bucket."""
    from jobs.lake import s3

    files = arrivals(0, 2)
    land(f"{s3_root}/landing/clickstream", files)
    connection = {
        "conn_type": "aws",
        "login": "test-access-key",
        "password": S3_SECRET,
        "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
    }
    env = {key: "" for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3", "AWS_REGION")}
    run = dags_test(airflow_home, s3_root, "jobs_clickstream", AIRFLOW_CONN_AWS_DEFAULT=json.dumps(connection), **env)
    assert run.state == "success", run.output[-5000:]
    assert "S3 credentials from the Airflow connection 'aws_default'" in run.output
    model = ClickstreamModel()
    model.run([all_lines(files)])
    assert table_rows(spark, f"{s3_root}/tables/clickstream") == model.rows()
    assert run.xcom("publish_report")["input_rows"] == len(all_lines(files))

    assert S3_SECRET not in run.output
    for log in airflow_home.rglob("*"):
        if log.is_file() and log.suffix != ".db":
            assert S3_SECRET.encode() not in log.read_bytes(), log
    prefix = s3_root.removeprefix(f"s3a://{S3_BUCKET}/")
    for page in s3.client().get_paginator("list_objects_v2").paginate(Bucket=S3_BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            body = s3.client().get_object(Bucket=S3_BUCKET, Key=item["Key"])["Body"].read()
            assert S3_SECRET.encode() not in body, item["Key"]
