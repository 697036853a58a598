"""Fixtures: one SparkSession and one S3 server per test process, fresh roots per test.

Under pytest-xdist each worker is a test process with its own session and server.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

from jobs import declare, jvm
from jobs.lake.layout import Locations
from jobs.settings import settings
from tests.helpers import REPO, S3_BUCKET, S3_SECRET

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Every JVM starts lean (tests read small data; jobs/jvm/archive.py), also those the product starts
# with its own options (spark-submit's launcher), and with Spark's classes mapped from the
# product's archive, which the controlling process makes first if there is none.
_OWN_JAVA_OPTIONS = "JAVA_TOOL_OPTIONS" not in os.environ
os.environ.setdefault("JAVA_TOOL_OPTIONS", jvm.LEAN_OPTIONS)
# Great Expectations' local project for a root in a bucket: outside the checkout (JOBS_QUALITY_DIR).
# Made once, by the process that starts the tests (workers inherit it), and removed at its exit.
if "JOBS_QUALITY_DIR" not in os.environ:
    _quality_home = tempfile.mkdtemp(prefix="jobs-tests-")
    atexit.register(shutil.rmtree, _quality_home, ignore_errors=True)
    os.environ["JOBS_QUALITY_DIR"] = os.path.join(_quality_home, "quality")
# Spark's scratch (a driver's copies of the jars, about 0.7 GB; shuffle files) in one folder the
# session removes at its exit: a driver a test kills leaves its scratch behind.
if "SPARK_LOCAL_DIRS" not in os.environ:
    _spark_scratch = tempfile.mkdtemp(prefix="jobs-tests-spark-")
    atexit.register(shutil.rmtree, _spark_scratch, ignore_errors=True)
    os.environ["SPARK_LOCAL_DIRS"] = _spark_scratch
# Hypothesis keeps what it learns (examples, constants) in the cache, not in a folder of its own
# in the checkout.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(settings().cache_dir / "hypothesis"))
set_hypothesis_home_dir(os.environ["HYPOTHESIS_STORAGE_DIRECTORY"])
# Airflow, imported by some tests, sets the root logger to INFO; py4j's finalizers then log
# "Closing down clientserver connection" at a worker's exit, into a stream pytest closed.
logging.getLogger("py4j").setLevel(logging.WARNING)


def _checkout_status() -> set[str]:
    """What `git status --ignored` lists in the checkout (empty outside a git checkout)."""
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return set(listed.stdout.splitlines()) if listed.returncode == 0 else set()


# What tests may leave in the checkout: the environment and the tools' own caches (the product's
# cache is the user's: jobs/settings.py).
_MAY_WRITE = (".venv/", ".pytest_cache/", ".ruff_cache/")


def _written_by_tests(before: set[str], after: set[str]) -> list[str]:
    new = [entry[3:] for entry in sorted(after - before)]
    return [path for path in new if not path.startswith(_MAY_WRITE) and "__pycache__/" not in path]


def pytest_sessionfinish(session, exitstatus):
    """A test that wrote into the checkout, outside its temporary folders, fails the session."""
    before = getattr(session.config, "_checkout_before", None)
    if before is None:
        return
    written = _written_by_tests(before, _checkout_status())
    if written:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        shown = ", ".join(written[:10]) + (" ..." if len(written) > 10 else "")
        reporter.write_line(f"tests wrote into the checkout (use tmp_path): {shown}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # once, in the process that controls the session
        config._checkout_before = _checkout_status()
    # xdist hands out modules by their number of tests unless told not to; LONGEST_FIRST
    # (below) is the order wanted, so the collection order is kept.
    config.option.loadscopereorder = False
    if _OWN_JAVA_OPTIONS and not hasattr(config, "workerinput"):  # xdist's workers inherit it
        if not jvm.archive_path().exists():
            print(
                "tests: archiving Spark's and Delta's JVM classes for faster starts (once per JDK, Spark and Delta, ~45 s)"
            )
        archive = jvm.make_archive()
        if archive:
            os.environ["JAVA_TOOL_OPTIONS"] = f"{jvm.LEAN_OPTIONS} -XX:SharedArchiveFile={archive} {jvm.QUIET}"


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3-protocol server (moto) on 127.0.0.1, for the whole test session.

    Its settings go into the environment before the SparkSession starts, as a user's
    would: the JVM's credential provider reads them from there.
    """
    from moto.server import ThreadedMotoServer

    from jobs.lake import s3

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{server._server.server_port}"
    settings = {
        "AWS_ACCESS_KEY_ID": "test-access-key",
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": endpoint,
    }
    with pytest.MonkeyPatch.context() as patch:
        for key, value in settings.items():
            patch.setenv(key, value)
        s3.reset()
        s3.client().create_bucket(Bucket=S3_BUCKET)
        yield endpoint
        server.stop()
    s3.reset()


@pytest.fixture(scope="session")
def spark(s3_endpoint):
    from jobs.session import get_spark, merged_conf, s3a_conf, table_conf

    # The tests' one session writes both formats (a pipeline's own session has only its table's).
    conf = merged_conf({"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}, s3a_conf())
    conf = merged_conf(conf, table_conf(["delta"]))
    session = get_spark("jobs-tests", conf)
    _keep_pytests_log_format()
    yield session
    session.stop()


def _keep_pytests_log_format() -> None:
    """pytest attaches its log capture to every logger that does not propagate, and PySpark's
    query-context loggers stop propagating once an error with a DataFrame's context is raised:
    their addHandler then sets PySpark's JSON formatter on pytest's handler, and every later
    test's `caplog.text` is JSON. They are silenced (jobs/session.py): their handlers keep theirs."""
    from pyspark.logger.logger import PySparkLogger

    PySparkLogger.addHandler = logging.Logger.addHandler


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory) -> Path:
    """A migrated Airflow metadata DB (SQLite), shared by the session's Airflow tests."""
    from tests.airflow.dag_runs import AIRFLOW, airflow_env

    home = tmp_path_factory.mktemp("airflow_home")
    result = subprocess.run(
        [AIRFLOW, "db", "migrate"],
        env=airflow_env(home, str(home / "root")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return home


@pytest.fixture
def s3_root(s3_endpoint, request) -> str:
    """A fresh prefix in the test bucket."""
    return f"s3a://{S3_BUCKET}/{request.node.name[:60]}-{secrets.token_hex(3)}"


@pytest.fixture
def clickstream() -> declare.PipelineBase:
    return declare.load("clickstream")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def locations(root: Path, clickstream) -> Locations:
    return Locations.resolve(clickstream.name, root=str(root))


# The longest modules, measured (worker seconds, 3 workers on 2 cores, 2026-11-24): they
# start first. Under `--dist loadscope` each module is one unit of work for one worker, and
# a long one started last would run alone at the end (pytest_configure keeps this order).
LONGEST_FIRST = (
    "tests/cluster/test_cluster.py",  # 360 s
    "tests/integration/test_s3_faults.py",  # 410 s (2026-11-25)
    "tests/airflow/test_on_arrival.py",  # about 300 s alone (2026-11-26): two running Airflows, nine DAG runs
    "tests/integration/test_s3_busy.py",  # 200 s
    "tests/integration/test_s3.py",  # 227 s
    "tests/airflow/test_pipeline_dag_runs.py",  # 193 s
    "tests/integration/test_rebuild.py",  # about 330 s alone (2026-11-26): nine rebuilds, two in a bucket
    "tests/airflow/test_rebuild_dag_runs.py",  # 122 s alone: two `airflow dags test` runs, one killed
    "tests/integration/test_backfill_into_table.py",  # about 100 s alone
    "tests/integration/test_window_and_event_pipelines.py",  # 163 s
    "tests/integration/test_poison_records.py",  # about 150 s (2026-11-24)
    "tests/airflow/test_rule_dag_runs.py",  # 112 s under load (two `airflow dags test` runs)
    "tests/integration/test_processor_and_join_pipelines.py",  # 95 s
    "tests/integration/test_quality.py",  # 91 s
    "tests/airflow/test_backfill_dag_runs.py",  # 90 s
    "tests/e2e/test_crash.py",  # 86 s
    "tests/e2e/test_cli.py",  # 70 s
    "tests/integration/test_backfill.py",  # 58 s
    "tests/unit/test_parse.py",  # 51 s, the worker's Spark start included
    "tests/airflow/test_s3_dag_runs.py",  # 50 s
    "tests/integration/test_streaming.py",  # 47 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within a module stays
