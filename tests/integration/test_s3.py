"""Every location in a bucket on a real S3-protocol server (moto on 127.0.0.1), over s3a://."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest

from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger
from jobs.declare.operations import Retention
from jobs.lake import s3
from jobs.lake.fs import list_names, read_text
from jobs.lake.layout import Locations, StorageError, split_bucket
from jobs.run.report import load_reports
from tests.helpers import (
    REPO,
    S3_BUCKET,
    S3_SECRET,
    all_lines,
    assert_run_matches,
    event,
    land,
    python_cmd,
    run_pipeline,
    table_rows,
)
from tests.integration.test_streaming import ARRIVALS
from tests.model import ClickstreamModel
from tests.tcp_proxy import TcpProxy


def test_arrivals_in_a_bucket_match_the_model_run_by_run(spark, s3_root):
    spec = declare.load("clickstream")
    locations = Locations.resolve(spec.name, root=s3_root)
    assert locations.checkpoint.startswith("s3a://") and locations.runs.startswith("s3a://")
    model = ClickstreamModel()
    landed_bytes = {}
    for files in ARRIVALS:
        landed = land(locations.landing, files)
        landed_bytes |= {
            path: len("".join(f"{line}\n" for line in files[path.rsplit("/", 1)[-1]]).encode()) for path in landed
        }
        assert all(path.startswith(f"s3a://{S3_BUCKET}/") for path in landed)
        report = run_pipeline(spark, spec, locations)
        expected = model.run([all_lines(files)])
        # Only the new objects are read, and every row is accounted for.
        assert report.input_files == len(files)
        assert not report.skipped_files  # the listing and Spark's log agree on every object
        assert_run_matches(report, expected)
        assert table_rows(spark, locations.output) == model.rows()
    # Checkpoint, sink log, quarantine and reports are objects in the bucket.
    assert "commits" in list_names(locations.checkpoint)
    assert list_names(f"{locations.output}/_spark_metadata")
    assert len(load_reports(locations.runs)) == len(ARRIVALS)
    assert list_names(locations.quarantine)
    # The file ledger names every object once, with its size, from what the runs recorded.
    taken = taken_files(Ledger(locations.ledger), CheckpointLog.of(locations))
    assert {f["path"]: f["size_bytes"] for f in taken} == landed_bytes
    assert sum(f["input_rows"] for f in taken) == sum(r.input_rows for r in load_reports(locations.runs))
    # The run history, two Delta tables in the bucket, read back without Spark.
    from jobs.history import query

    history = query.connect(s3_root, "clickstream")
    counted = history.execute("SELECT count(*), sum(input_rows) FROM runs WHERE record = 'run'").fetchone()
    assert counted == (len(ARRIVALS), sum(r.input_rows for r in load_reports(locations.runs)))


def test_a_run_with_nothing_new_reads_nothing(spark, s3_root):
    spec = declare.load("clickstream")
    locations = Locations.resolve(spec.name, root=s3_root)
    land(locations.landing, ARRIVALS[0])
    run_pipeline(spark, spec, locations)
    again = run_pipeline(spark, spec, locations)
    assert (again.batches, again.input_rows) == (0, 0)


def test_date_organised_prefixes_and_listing_limits(spark, s3_root):
    spec = declare.load("clickstream")
    locations = Locations.resolve(spec.name, root=s3_root)
    old = {"a.json": [event("u1", "2023-07-28T10:00:10Z"), event("u1", "2023-07-28T10:00:20Z")]}
    new = {"b.json": [event("u2", "2023-07-30T10:00:10Z")], "c.json": [event("u3", "2023-07-30T10:00:30Z")]}
    land(f"{locations.landing}/dt=2023-07-28/hour=10", old)
    land(f"{locations.landing}/dt=2023-07-30/hour=10", new)

    # Only dt= folders from 2023-07-29 on are listed: the old file is never seen.
    report = run_pipeline(spark, spec, locations, landing_since=date(2023, 7, 29))
    assert (report.input_files, report.input_rows) == (2, 2)

    # A glob: one more file in the same hour is read; nothing twice.
    land(f"{locations.landing}/dt=2023-07-30/hour=11", {"d.json": [event("u4", "2023-07-30T11:00:00Z")]})
    report = run_pipeline(spark, spec, locations, landing_glob="dt=2023-07-3*/hour=*")
    assert (report.input_files, report.input_rows) == (1, 1)

    # Without a limit, the whole history is listed and only the old file is new.
    report = run_pipeline(spark, spec, locations)
    assert (report.input_files, report.input_rows) == (1, 2)


@pytest.mark.slow
def test_the_server_going_away_mid_run_fails_clearly_and_the_next_run_resumes(spark, s3_root, s3_endpoint, tmp_path):
    spec = declare.load("clickstream")
    locations = Locations.resolve(spec.name, root=s3_root)
    files = {f"part-{i}.json": [event(f"u{i % 3}", f"2023-07-30T10:{i:02d}:10Z") for _ in range(3)] for i in range(6)}
    # One file per batch, in landing order: S3 keeps modification times to the second.
    for name, lines in files.items():
        land(locations.landing, {name: lines})
        time.sleep(1.05)
    proxy = TcpProxy(int(s3_endpoint.rsplit(":", 1)[1])).start()
    env = {**os.environ, "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{proxy.port}"}
    command = python_cmd("run", "clickstream", "--root", s3_root, "--max-files-per-trigger", "1", "--no-validate")

    run = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in run.stdout:
            if line.strip().startswith("batch 2:"):
                proxy.stop()  # the server is gone, mid-run
                break
        out, err = run.communicate(timeout=300)
    finally:
        proxy.stop()
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, out + err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"cannot reach the S3 endpoint http://127.0.0.1:{proxy.port}" in errors[0], err
    assert len(err.splitlines()) < 40, err  # the causes, not pages of stack traces

    # The failed run could not release its lease, but it ran on this machine and is gone:
    # the rerun takes the lease over at once.
    proxy.start()  # the server is back, with its data
    started = time.monotonic()
    try:
        rest = python_cmd("run", "clickstream", "--root", s3_root, "--no-validate")  # in one batch
        again = subprocess.run(rest, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    finally:
        proxy.stop()
    assert again.returncode == 0, again.stdout + again.stderr
    print(f"\nafter a failed run: the rerun took the lease over and finished in {time.monotonic() - started:.1f} s")

    model = ClickstreamModel()
    model.run([lines for lines in files.values()])
    assert table_rows(spark, locations.output) == model.rows()
    succeeded = [r for r in load_reports(locations.runs) if r.status == "succeeded"]
    counted = sum(r.input_rows for r in load_reports(locations.runs))
    assert succeeded and counted == sum(len(lines) for lines in files.values())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_wrong_credentials_give_a_clear_error_and_no_secret(tmp_path):
    port = _free_port()
    # A server that checks every request's signature against the keys it knows: none.
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 20
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert time.monotonic() < deadline, "moto server did not start"
            time.sleep(0.2)
        env = {
            **os.environ,
            "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "wrong-key",
            "AWS_SECRET_ACCESS_KEY": S3_SECRET,  # a key the server does not know, with a secret that must not leak
        }
        result = subprocess.run(
            python_cmd("run", "clickstream", "--root", "s3a://lake/wrong"),
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    assert result.returncode == 3, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "refused the credentials" in errors[0] and "AWS_SECRET_ACCESS_KEY" in errors[0]
    assert S3_SECRET not in result.stdout + result.stderr


@pytest.mark.slow
def test_the_secret_never_appears_in_output_reports_or_spark_config(spark, s3_root, tmp_path):
    spec = declare.load("clickstream")
    locations = Locations.resolve(spec.name, root=s3_root)
    land(locations.landing, ARRIVALS[0])
    land(locations.landing, ARRIVALS[1])
    env = {**os.environ, "SPARK_LOG_LEVEL": "INFO"}  # even Spark's chatty log level
    run = subprocess.run(
        python_cmd("run", "clickstream", "--root", s3_root), cwd=REPO, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    validate = subprocess.run(
        python_cmd("validate", "clickstream", "--root", s3_root, "--all"), cwd=REPO, capture_output=True, text=True
    )
    report = subprocess.run(python_cmd("report", "--root", s3_root), cwd=REPO, capture_output=True, text=True)
    assert validate.returncode == 0 and report.returncode == 0, validate.stderr + report.stderr

    printed = run.stdout + run.stderr + validate.stdout + validate.stderr + report.stdout + report.stderr
    assert S3_SECRET not in printed
    # Everything written to the bucket: checkpoint, table, quarantine, reports, Data Docs.
    bucket, prefix = split_bucket(s3_root)
    written = 0
    for page in s3.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            body = s3.client().get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
            assert S3_SECRET.encode() not in body, item["Key"]
            written += 1
    assert written > 20
    # Everything written locally for it (the Great Expectations project).
    for file in Path(locations.quality).rglob("*"):
        if file.is_file():
            assert S3_SECRET.encode() not in file.read_bytes(), file
    # Spark's configuration, as `spark.sparkContext.getConf()` or the UI would print it.
    assert S3_SECRET not in json.dumps(spark.sparkContext.getConf().getAll())
    assert [r.status for r in load_reports(locations.runs)] == ["succeeded"]


def test_s3_errors_are_one_line_without_secrets(s3_endpoint):
    with pytest.raises(StorageError, match="bucket no-such-bucket does not exist") as error:
        read_text("s3a://no-such-bucket/x.json")
    assert S3_SECRET not in str(error.value)


def test_retention_archives_landed_objects_within_the_bucket(spark, s3_root):
    declared = declare.load("clickstream")
    spec = declared.model_copy(update={"retention": Retention(landed="archive", landed_after=0)})
    locations = Locations.resolve(spec.name, root=s3_root)
    files = {"a.json": [event("u1", "2023-07-30T10:00:10Z")], "b.json": [event("u2", "2023-07-30T10:00:20Z"), "{"]}
    land(locations.landing, files)

    report = run_pipeline(spark, spec, locations)

    assert (report.retention.archived, list_names(locations.landing)) == (2, [])
    assert {name: read_text(f"{locations.archive}/{name}") for name in files} == {
        name: "".join(f"{line}\n" for line in lines) for name, lines in files.items()
    }
    taken = taken_files(Ledger(locations.ledger), CheckpointLog.of(locations))
    assert sorted((f["path"].rsplit("/", 1)[-1], f["quarantined_rows"]) for f in taken) == [
        ("a.json", 0),
        ("b.json", 1),
    ]


def test_s3a_runs_on_hadoop_aws_of_spark_s_own_hadoop_and_the_aws_sdk_v2(spark, s3_root):
    """What the JVM loads for s3a://: the jar lock's hadoop-aws, of the Hadoop Spark ships,
    and the SDK v2's own modules (not its bundle); no hadoop-aws 3.3.1, no SDK v1 anywhere on the classpath."""
    jvm = spark.sparkContext._jvm
    filesystem = jvm.org.apache.hadoop.fs.FileSystem.get(
        jvm.java.net.URI(s3_root), spark.sparkContext._jsc.hadoopConfiguration()
    )
    loader = filesystem.getClass().getClassLoader()

    def jar_of(name: str) -> str:
        return Path(str(loader.loadClass(name).getProtectionDomain().getCodeSource().getLocation().getPath())).name

    hadoop = str(jvm.org.apache.hadoop.util.VersionInfo.getVersion())
    assert jar_of("org.apache.hadoop.fs.s3a.S3AFileSystem") == f"hadoop-aws-{hadoop}.jar"
    assert jar_of("software.amazon.awssdk.services.s3.S3Client").startswith("s3-2.")
    assert jar_of("software.amazon.awssdk.services.sts.StsClient").startswith("sts-2.")
    assert jar_of("software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient").startswith("netty-nio-client-2.")
    for v1 in ("com.amazonaws.services.s3.AmazonS3", "com.amazonaws.auth.AWSCredentials"):
        with pytest.raises(Exception, match="ClassNotFoundException"):
            loader.loadClass(v1)
