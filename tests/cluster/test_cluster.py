"""The pipelines and a DAG on a real Spark standalone cluster: a master and two workers
started from pyspark's own Spark (infra/spark/cluster.py, what `make cluster` runs), with
every location in a bucket on the local S3 server.

The workers are nodes of their own: a clean environment, their own working directories,
and a Python without the `jobs` package. A window or join pipeline's executors get the
product's jar alone (its lines are read and counted in the JVM); a processor's run passes
only if its application ships the package to them. The nodes hold their own S3 credentials (as an instance role would);
the driver's never travel in Spark's configuration. Every application writes an event
log, from which the tests read where each task ran.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from demo import samples
from infra.spark.cluster import Cluster
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from jobs.settings import settings
from tests.airflow.dag_runs import dags_test
from tests.helpers import REPO, S3_SECRET, all_lines, event, free_port, land, python_cmd, table_rows
from tests.histories import assert_history_matches, run_histories_in_processes
from tests.model import AdJoinModel, ClickstreamModel, SpendingSessionsModel

# The histories' fixture runs six pipeline runs on the cluster: minutes alone, more beside
# the other test workers; its first test's limit covers it.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ARRIVALS = 2
MODELS = {"clickstream": ClickstreamModel, "spending_sessions": SpendingSessionsModel, "ad_clicks": AdJoinModel}


@pytest.fixture(scope="module")
def cluster(s3_endpoint, tmp_path_factory):
    home = tmp_path_factory.mktemp("cluster")
    cluster = Cluster(home=home, master_port=free_port(), ui_port=free_port(), memory="1g")
    # The nodes' own access to the bucket; the endpoint reaches the executors in s3a's settings.
    credentials = {
        "AWS_ACCESS_KEY_ID": "test-access-key",
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
        "AWS_REGION": "us-east-1",
    }
    # Small data: executors start as the drivers do here (tests/conftest.py).
    cluster.start({**credentials, "JAVA_TOOL_OPTIONS": os.environ["JAVA_TOOL_OPTIONS"]})
    yield cluster
    cluster.stop()
    for folder in home.glob("worker-*/app-*"):  # each executor's copy of what its application shipped
        shutil.rmtree(folder)


@pytest.fixture(scope="module")
def event_logs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("event-logs")


@pytest.fixture(scope="module")
def driver_env(cluster, event_logs, tmp_path_factory) -> dict[str, str]:
    """A driver's environment pointed at the cluster: its master, and Spark defaults that
    turn the event log on (read by every spark-submit, the CLI's and Airflow's alike).
    Nothing of this test process's Python reaches the executors."""
    conf_dir = tmp_path_factory.mktemp("spark-conf")
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir {event_logs.as_uri()}\n"
        "spark.eventLog.compress false\nspark.eventLog.rolling.enabled false\n"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("PYSPARK_PYTHON", "PYTHONPATH")}
    return {**env, "SPARK_MASTER": cluster.master_url, "SPARK_CONF_DIR": str(conf_dir)}


@pytest.fixture(scope="module")
def histories(spark, cluster, driver_env, s3_endpoint, tmp_path_factory):
    root = f"s3a://lake/cluster-{time.monotonic_ns()}"
    return run_histories_in_processes(spark, root, list(MODELS), driver_env, ARRIVALS)


def events(log: Path) -> list[dict]:
    """An application's events; the log of a driver killed mid-run may end in a cut line."""
    lines = log.read_text().splitlines()
    if log.name.endswith(".inprogress") and lines:
        try:
            json.loads(lines[-1])
        except json.JSONDecodeError:
            lines.pop()
    return [json.loads(line) for line in lines]


def tasks_by_executor(event_logs: Path) -> dict[str, Counter]:
    """Application id -> {executor id: tasks it ran}, from the event logs of the cluster's
    applications (app-..., not a local one's: local-...)."""
    found = {}
    for log in event_logs.glob("app-*"):
        tasks = Counter(e["Task Info"]["Executor ID"] for e in events(log) if e["Event"] == "SparkListenerTaskEnd")
        found[log.name.split(".")[0]] = tasks
    return found


def queries_run(event_logs: Path) -> dict[str, set[str]]:
    """Application id -> the names of the streaming queries it started (a query is named
    after its pipeline): one run process may run several pipelines."""
    found = {}
    for log in event_logs.iterdir():
        found[log.name.split(".")[0]] = {e["name"] for e in events(log) if e["Event"].endswith("QueryStartedEvent")}
    return found


def executors_on_workers(cluster: Cluster) -> dict[str, dict[str, str]]:
    """Application id -> {executor id: the worker that ran it}, from the workers' folders."""
    found: dict[str, dict[str, str]] = {}
    for worker in cluster.home.glob("worker-*"):
        for executor in worker.glob("app-*/*"):
            found.setdefault(executor.parent.name, {})[executor.name] = worker.name
    return found


def test_the_nodes_python_cannot_import_the_jobs_package(cluster, tmp_path):
    """So every run below passes only because the application shipped the code."""
    probe = subprocess.run([cluster.python, "-c", "import pyspark, jobs"], cwd=tmp_path, capture_output=True, text=True)
    assert "No module named 'jobs'" in probe.stderr


@pytest.mark.parametrize("name", list(MODELS))
def test_pipelines_on_the_cluster_match_the_model_over_arrivals_and_restarts(histories, name):
    """A windowed aggregation, a stateful processor and a stream-stream join, each arrival
    run by a new application on the cluster: the second restarts from the checkpoint and
    the state the first left."""
    history = histories[name]
    arrivals = samples.arrivals(name)[:ARRIVALS]
    assert_history_matches(history, MODELS[name](), arrivals)
    assert history.locations.checkpoint.startswith("s3a://")


def test_every_task_ran_on_the_workers_executors(histories, cluster, event_logs):
    ran = tasks_by_executor(event_logs)
    placed = executors_on_workers(cluster)
    queries = queries_run(event_logs)
    assert len(ran) >= ARRIVALS  # one application per run process
    for app, tasks in ran.items():
        assert "driver" not in tasks and sum(tasks.values()) > 0, app
        # Each executor that ran tasks is one a worker launched, and both workers took part.
        assert set(tasks) <= set(placed[app]), app
        assert {placed[app][executor] for executor in tasks} == {"worker-1", "worker-2"}, app
        # ... each with the product's jar, and the package its processor needs (a zip the
        # application shipped into its working directory): each run process ran all three.
        assert "spending_sessions" in queries[app], app
        for executor in tasks:  # an executor started as its application ended may hold nothing
            folder = cluster.home / placed[app][executor] / app / executor
            assert list(folder.glob("jobs-jvm-*.jar")), (app, executor)
            assert list(folder.glob("jobs-[0-9a-f]*.zip")), (app, executor)
    assert set(MODELS) <= set().union(*queries.values())


def test_a_driver_killed_mid_run_and_rerun_counts_every_record_once(spark, cluster, driver_env, s3_endpoint):
    root = f"s3a://lake/cluster-kill-{time.monotonic_ns()}"
    landing = Locations.resolve("clickstream", root=root).landing
    files = {
        f"part-{i}.json": [event(f"u{j % 3}", f"2023-07-30T10:{4 * i + j % 4:02d}:{j:02d}Z") for j in range(8)]
        + ["{unusable"]
        for i in range(4)
    }
    for name, lines in files.items():  # one batch each, in order: S3 keeps times to the second
        land(landing, {name: lines})
        time.sleep(1.05)
    command = python_cmd("run", "clickstream", "--root", root, "--max-files-per-trigger", "1", "--no-validate")

    victim = subprocess.Popen(
        command, cwd=REPO, env=driver_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    seen = []
    for line in victim.stdout:
        seen.append(line)
        if line.strip().startswith("batch 1:"):  # batch 1 committed, batch 2 under way
            victim.send_signal(signal.SIGKILL)
            break
    victim.wait(timeout=60)
    assert victim.returncode == -signal.SIGKILL, "".join(seen)

    rerun = subprocess.run(command, cwd=REPO, env=driver_env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr

    model = ClickstreamModel()
    model.run(list(files.values()))
    assert table_rows(spark, f"{root}/tables/clickstream") == model.rows()
    reports = load_reports(f"{root}/runs/clickstream")
    assert sum(r.input_rows for r in reports) == len(all_lines(files))
    assert sum(r.quarantined_rows for r in reports) == len(files)


def test_a_pipeline_dag_runs_on_the_cluster_by_its_spark_connection(
    spark, cluster, driver_env, airflow_home, s3_endpoint
):
    root = f"s3a://lake/cluster-dag-{time.monotonic_ns()}"
    arrival = samples.arrivals("clickstream")[0]
    land(f"{root}/landing/clickstream", arrival)
    connection = {"conn_type": "spark", "host": cluster.master_url}
    # The executors' Python is the nodes' own (what PYSPARK_PYTHON would otherwise name).
    env = {"SPARK_CONF_DIR": driver_env["SPARK_CONF_DIR"], "PYSPARK_PYTHON": ""}
    run = dags_test(airflow_home, root, "jobs_clickstream", AIRFLOW_CONN_SPARK_DEFAULT=json.dumps(connection), **env)
    assert run.state == "success", run.output[-5000:]
    model = ClickstreamModel()
    model.run([all_lines(arrival)])
    assert table_rows(spark, f"{root}/tables/clickstream") == model.rows()
    assert run.xcom("run_report")["input_rows"] == len(all_lines(arrival))


def test_an_application_without_a_processor_ships_the_jar_alone(spark, cluster, driver_env, event_logs, s3_endpoint):
    """Reading and counting lines is the JVM's: a window pipeline's executors get no Python
    package. The run above by the DAG is one such application (run here if it was not)."""

    def windows_only() -> list[str]:  # applications on the cluster (not a local one beside it)
        placed = executors_on_workers(cluster)
        return [
            app for app, names in queries_run(event_logs).items() if app in placed and "spending_sessions" not in names
        ]

    if not windows_only():
        root = f"s3a://lake/cluster-jar-{time.monotonic_ns()}"
        land(Locations.resolve("clickstream", root=root).landing, samples.arrivals("clickstream")[0])
        command = python_cmd("run", "clickstream", "--root", root, "--no-validate")
        run = subprocess.run(command, cwd=REPO, env=driver_env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
    placed = executors_on_workers(cluster)
    ran = tasks_by_executor(event_logs)
    assert any(ran.get(app) for app in windows_only())
    for app in windows_only():
        # Those that ran tasks: an executor the master started as its application ended (the
        # killed driver's) may never have fetched anything.
        for executor in ran.get(app, {}):
            folder = cluster.home / placed[app][executor] / app / executor
            assert list(folder.glob("jobs-jvm-*.jar")), (app, executor)
            assert not list(folder.glob("jobs-[0-9a-f]*.zip")), (app, executor)


def test_no_secret_in_spark_configuration_logs_ui_or_event_log(histories, cluster, event_logs):
    places = [*event_logs.iterdir(), *(p for p in cluster.home.rglob("*") if p.is_file())]
    places += [p for p in (settings().cache_dir / "logs").glob("*.log")]
    for path in places:
        assert S3_SECRET.encode() not in path.read_bytes(), path
    assert S3_SECRET not in json.dumps(cluster.state())
