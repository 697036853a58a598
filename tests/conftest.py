"""Shared fixtures: one SparkSession for the whole test session, and data helpers."""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import sys
import time
from datetime import UTC
from pathlib import Path

import pytest

from jobs import runner
from jobs import spec as specs
from jobs.landing import land_lines
from jobs.report import RunReport
from jobs.runner import RunOptions
from jobs.storage import Locations, list_names

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# The driver JVM starts faster without the optimizing compiler; tests run small data.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


# A secret that must never appear in anything a run prints or writes (tests/integration/test_s3.py).
S3_SECRET = f"test-secret-{secrets.token_hex(8)}"
S3_BUCKET = "lake"


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3-protocol server (moto) on 127.0.0.1, for the whole test session.

    Its settings go into the environment before the SparkSession starts, as a user's
    would: the JVM's credential provider reads them from there.
    """
    from moto.server import ThreadedMotoServer

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
    from jobs import s3

    with pytest.MonkeyPatch.context() as patch:
        for key, value in settings.items():
            patch.setenv(key, value)
        s3.client.cache_clear()
        s3.client().create_bucket(Bucket=S3_BUCKET)
        yield endpoint
        server.stop()
    s3.client.cache_clear()


@pytest.fixture(scope="session")
def spark(s3_endpoint):
    from jobs import s3
    from jobs.session import get_spark

    conf = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", **s3.spark_conf()}
    session = get_spark("jobs-tests", conf)
    yield session
    session.stop()


@pytest.fixture
def s3_root(s3_endpoint, request) -> str:
    """A fresh prefix in the test bucket."""
    return f"s3a://{S3_BUCKET}/{request.node.name[:60]}-{secrets.token_hex(3)}"


@pytest.fixture
def clickstream() -> specs.PipelineSpec:
    return specs.load("clickstream")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def locations(root: Path, clickstream: specs.PipelineSpec) -> Locations:
    return Locations.resolve(clickstream.name, root=str(root))


def event(user: str | None, timestamp: str | None, event_id: str = "e", **extra: object) -> str:
    record = {"event_id": event_id, "event": "click", **extra}
    if user is not None:
        record["user_id"] = user
    if timestamp is not None:
        record["eventtimestamp"] = timestamp
    return json.dumps(record)


def land(landing: str, files: dict[str, list[str]]) -> list[str]:
    """Land files atomically, like a producer would."""
    return land_lines(files, landing)


def land_in_order(landing: str, files: dict[str, list[str]]) -> None:
    """One file at a time: the file source orders a batch by modification time only,
    so distinct times make the order of one-file batches certain."""
    for name, lines in files.items():
        land(landing, {name: lines})
        time.sleep(0.02)


def run_pipeline(spark, spec, locations, quiet: list[str], **options) -> RunReport:
    """An in-process run on the shared session, its output collected in `quiet`."""
    return runner.run(spec, locations, RunOptions(**options), spark=spark, echo=quiet.append)


CLICKSTREAM_TABLE = "window_start timestamp, window_end timestamp, user_id string, event_count long, window_date date"


def table_rows(spark, output: str) -> list[tuple]:
    """The clickstream table as sorted (window_start, window_end, user_id, event_count), in UTC.

    Read with its schema through the sink log, so a table whose batches committed no
    file yet reads as empty; works for local paths and s3a:// alike."""
    if not list_names(output):
        return []
    rows = spark.read.schema(CLICKSTREAM_TABLE).parquet(output).collect()
    return sorted(
        (r.window_start.replace(tzinfo=UTC), r.window_end.replace(tzinfo=UTC), r.user_id, r.event_count) for r in rows
    )


def replace_parquet_file(spark, target: Path, rows) -> None:
    """Replace one committed clickstream Parquet file with `rows` (a pandas DataFrame), as a
    bad writer would: the sink log still lists it, so readers take the new content."""
    scratch = target.parent.parent.parent / f"scratch-{secrets.token_hex(3)}"
    schema = "window_start timestamp, window_end timestamp, user_id string, event_count long"
    spark.createDataFrame(rows, schema).coalesce(1).write.parquet(str(scratch))
    (part,) = scratch.glob("part-*.parquet")
    shutil.move(part, target)
    shutil.rmtree(scratch)
    (target.parent / f".{target.name}.crc").unlink()  # Hadoop's checksum of the old content


def all_lines(files: dict[str, list[str]]) -> list[str]:
    """Every line of an arrival's files, in landing order."""
    return [line for lines in files.values() for line in lines]


def assert_run_matches(report: RunReport | dict, expected) -> None:
    """A run's row accounting (a report, or a stored one) equals the model's for the same batches."""
    if isinstance(report, dict):
        report = RunReport(**report)
    assert (report.input_rows, report.quarantined_rows, report.late_rows_dropped, report.aggregated_rows) == (
        expected.input_rows,
        expected.quarantined_rows,
        expected.late_rows_dropped,
        expected.aggregated_rows,
    )
    assert report.output_rows == len(expected.emitted)
    assert report.duplicates_dropped == expected.duplicates_dropped


def python_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "jobs", *args]


@pytest.fixture
def quiet() -> list[str]:
    """An echo that collects the runner's lines instead of printing them."""
    return []
