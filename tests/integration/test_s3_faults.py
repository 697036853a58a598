"""Faults between a run and its bucket: a stalled endpoint, a stop request inside a stalled
call, a lease lost to another run. Each run is a real `python -m jobs run` whose S3 traffic
passes through a proxy the test stalls (tests/tcp_proxy.py), like a server frozen with
SIGSTOP: connections are accepted, no byte comes back. (A busy store: test_s3_busy.py.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger
from jobs.lake import s3
from jobs.lake.layout import Locations, split_bucket
from jobs.lake.locks import AlreadyRunning, S3Lease
from jobs.run.report import load_reports
from tests.helpers import REPO, event, land, python_cmd, table_rows
from tests.model import ClickstreamModel
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow

# What README promises: a run whose endpoint stalls fails within this many seconds.
STALL_FAILS_WITHIN_S = 180
# And a stop request (SIGTERM) ends a run inside a stalled call once JOBS_STOP_GRACE_S
# (30 s by default; 5 s in the test) are up, within this many more.
STOP_GRACE_S = 5
STOP_ENDS_AFTER_GRACE_WITHIN_S = 15


def _land_one_per_second(landing: str, count: int) -> dict[str, list[str]]:
    """`count` files, one per batch in landing order: S3 keeps modification times to the second."""
    files = {
        f"part-{i}.json": [event(f"u{i % 3}", f"2023-07-30T10:{i:02d}:10Z") for _ in range(3)] for i in range(count)
    }
    for name, lines in files.items():
        land(landing, {name: lines})
        time.sleep(1.05)
    return files


def _start_run(s3_root: str, endpoint: str, **env: str) -> subprocess.Popen:
    command = python_cmd("run", "clickstream", "--root", s3_root, "--max-files-per-trigger", "1", "--no-validate")
    environment = {**os.environ, "AWS_ENDPOINT_URL_S3": endpoint, **env}
    return subprocess.Popen(
        command, cwd=REPO, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _rerun(s3_root: str, endpoint: str) -> subprocess.CompletedProcess:
    """A whole run, once the fault is gone; it must succeed."""
    command = python_cmd("run", "clickstream", "--root", s3_root, "--no-validate")
    environment = {**os.environ, "AWS_ENDPOINT_URL_S3": endpoint}
    again = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    return again


def _wait_for_batch(run: subprocess.Popen, batch: int) -> list[str]:
    printed = []
    for line in run.stdout:
        printed.append(line)
        if line.strip().startswith(f"batch {batch}:"):
            return printed
    raise AssertionError(f"the run ended before batch {batch}: " + "".join(printed) + run.stderr.read())


def _assert_exactly_once(spark, locations: Locations, files: dict[str, list[str]]) -> None:
    model = ClickstreamModel()
    model.run(list(files.values()))
    assert table_rows(spark, locations.output) == model.rows()
    reports = load_reports(locations.runs)
    ledger = Ledger(locations.ledger)
    # What each run claimed, and each batch's account: what a failure needs to be explained.
    claimed = [(r.status, r.batch_ids, r.input_rows) for r in reports]
    accounted = [(b, ledger.read_account(b)["input_rows"]) for b in sorted(ledger.accounted_batches())]
    assert sum(r.input_rows for r in reports) == sum(len(lines) for lines in files.values()), (claimed, accounted)


@contextlib.contextmanager
def _stalled_after_batch(s3_root: str, s3_endpoint: str, batch: int, **env: str):
    """A run (with `env`) whose endpoint stalls once it printed `batch`; after the block
    the endpoint answers again and a rerun must succeed."""
    proxy = TcpProxy(int(s3_endpoint.rsplit(":", 1)[1])).start()
    endpoint = f"http://127.0.0.1:{proxy.port}"
    try:
        run = _start_run(s3_root, endpoint, **env)
        _wait_for_batch(run, batch)
        proxy.stall()
        yield run, endpoint
        proxy.resume()
        started = time.monotonic()
        _rerun(s3_root, endpoint)
        print(f"the rerun finished {time.monotonic() - started:.1f} s after it started")
    finally:
        proxy.stop()


def test_a_stalled_endpoint_fails_the_run_within_minutes_and_the_rerun_goes_on_at_once(spark, s3_root, s3_endpoint):
    locations = Locations.resolve("clickstream", root=s3_root)
    files = _land_one_per_second(locations.landing, 6)
    with _stalled_after_batch(s3_root, s3_endpoint, 2) as (run, endpoint):
        stalled_at = time.monotonic()
        out, err = run.communicate(timeout=STALL_FAILS_WITHIN_S + 120)
        failed_after_s = time.monotonic() - stalled_at
        print(f"\nstalled endpoint: the run failed {failed_after_s:.1f} s after the stall")
        assert run.returncode == 1, out + err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and f"{endpoint} stopped answering" in errors[0], err
        assert "Traceback" not in err and len(err.splitlines()) < 15, err
        assert failed_after_s < STALL_FAILS_WITHIN_S
    _assert_exactly_once(spark, locations, files)


def test_sigterm_ends_a_run_stuck_in_a_stalled_call_once_its_grace_is_up(spark, s3_root, s3_endpoint):
    locations = Locations.resolve("clickstream", root=s3_root)
    files = _land_one_per_second(locations.landing, 4)
    with _stalled_after_batch(s3_root, s3_endpoint, 1, JOBS_STOP_GRACE_S=str(STOP_GRACE_S)) as (run, _):
        time.sleep(5)  # well inside a stalled call
        run.send_signal(signal.SIGTERM)
        asked_at = time.monotonic()
        out, err = run.communicate(timeout=STOP_GRACE_S + STOP_ENDS_AFTER_GRACE_WITHIN_S + 120)
        ended_after_s = time.monotonic() - asked_at
        print(f"\nSIGTERM inside a stalled call: the run ended {ended_after_s:.1f} s later")
        assert STOP_GRACE_S - 1 < ended_after_s < STOP_GRACE_S + STOP_ENDS_AFTER_GRACE_WITHIN_S, out + err
        assert run.returncode == 130, out + err  # stopped on request
        assert "Traceback" not in err and len(err.splitlines()) < 15, err
    _assert_exactly_once(spark, locations, files)


def test_a_run_whose_lease_another_run_took_stops_before_its_next_commit(spark, s3_root, s3_endpoint):
    locations = Locations.resolve("clickstream", root=s3_root)
    files = _land_one_per_second(locations.landing, 8)
    lock = split_bucket(f"{locations.ledger}/lock")
    run = _start_run(s3_root, s3_endpoint, JOBS_S3_LEASE_S="8")  # renewed every 2 s
    _wait_for_batch(run, 1)
    # Another run, on another machine, takes the lease over (as it may once it expired).
    holder = {"pid": 1, "host": "elsewhere", "pid_space": "another machine", "since": "2026-11-23T00:00:00+00:00"}
    s3.client().put_object(Bucket=lock[0], Key=lock[1], Body=json.dumps(holder).encode())
    taken_at = time.monotonic()
    out, err = run.communicate(timeout=120)
    stopped_after_s = time.monotonic() - taken_at
    committed_then = CheckpointLog.of(locations).committed_batches()
    print(f"\nlease taken over: the run stopped {stopped_after_s:.1f} s later, {len(committed_then)} batches committed")
    assert run.returncode == 1, out + err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "another run took the checkpoint's lease over (pid 1 on elsewhere" in errors[0], err
    assert stopped_after_s < 8 * 2 / 3 + 15  # the next renewal, then the query's stop
    # It committed some batches, not all, and claimed none it did not account.
    assert 0 < len(committed_then) < len(files)
    stale = load_reports(locations.runs)
    assert [r.status for r in stale] == ["failed"] and stale[0].input_rows == 0

    s3.client().delete_object(Bucket=lock[0], Key=lock[1])  # the other run finished
    again = _rerun(s3_root, s3_endpoint)
    assert "committed by an interrupted earlier run" in again.stdout
    _assert_exactly_once(spark, locations, files)


def test_a_lease_left_by_a_dead_process_here_is_taken_at_once_and_elsewhere_after_expiry(s3_root):
    ledger = Locations.resolve("clickstream", root=s3_root).ledger
    bucket, key = split_bucket(f"{ledger}/lock")
    with S3Lease(ledger, "clickstream", lease_s=60) as first:
        left = json.loads(s3.client().get_object(Bucket=bucket, Key=key)["Body"].read())
        first.ensure_held()
    assert left["host"] and left["pid"] > 0
    # A run on this machine that died without releasing it: free at once.
    dead_here = {**left, "pid": _dead_pid()}
    s3.client().put_object(Bucket=bucket, Key=key, Body=json.dumps(dead_here).encode())
    started = time.monotonic()
    with S3Lease(ledger, "clickstream", lease_s=60):
        pass
    assert time.monotonic() - started < 5
    # A run on another machine: its pid means nothing here, so its lease must expire first.
    elsewhere = {**left, "pid_space": "another machine"}
    s3.client().put_object(Bucket=bucket, Key=key, Body=json.dumps(elsewhere).encode())
    with pytest.raises(AlreadyRunning, match=rf"pid {left['pid']} on {left['host']}"):
        S3Lease(ledger, "clickstream", lease_s=2).__enter__()
    time.sleep(3.5)  # the store's clock counts whole seconds: 2 s of lease and 1 of its resolution
    with S3Lease(ledger, "clickstream", lease_s=2):
        pass
    assert s3.client().list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount") == 0  # released


def test_a_lease_let_go_between_a_refused_put_and_its_read_is_taken(s3_root, monkeypatch):
    """The holder deleted the lease just after our conditional PUT was refused: there is no
    object left to read, and the lease is free (CI once failed an OPTIMIZE here: 'does not exist')."""
    ledger = Locations.resolve("clickstream", root=s3_root).ledger
    bucket, key = split_bucket(f"{ledger}/lock")
    with S3Lease(ledger, "clickstream", lease_s=60) as holder:
        held = s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    s3.client().put_object(Bucket=bucket, Key=key, Body=held)  # a live run (this process) holds it
    put = S3Lease._put

    def refused_then_let_go(self, **condition):
        taken = put(self, **condition)
        if not taken and condition.get("IfNoneMatch"):
            s3.client().delete_object(Bucket=bucket, Key=key)  # the holder's release, that moment
        return taken

    monkeypatch.setattr(S3Lease, "_put", refused_then_let_go)
    with S3Lease(ledger, "clickstream", lease_s=60) as taken:
        taken.ensure_held()
    assert holder._me.token != taken._me.token


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_lease_is_aged_by_the_store_s_clock_not_this_machine_s(s3_root, monkeypatch):
    """Before, age was this machine's clock against S3's LastModified: a clock set 10 minutes
    ahead took a live lease of another machine over."""
    import jobs.lake.lease as lease

    ledger = Locations.resolve("clickstream", root=s3_root).ledger
    bucket, key = split_bucket(f"{ledger}/lock")
    live_elsewhere = {"pid": 1, "host": "elsewhere", "pid_space": "another machine", "since": "now"}
    s3.client().put_object(Bucket=bucket, Key=key, Body=json.dumps(live_elsewhere).encode())

    class Ahead(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.now(tz) + timedelta(minutes=10)

    monkeypatch.setattr(lease, "datetime", Ahead)
    with pytest.raises(AlreadyRunning, match="pid 1 on elsewhere"):
        S3Lease(ledger, "clickstream", lease_s=60).__enter__()


def test_a_lease_whose_process_is_gone_but_its_jvm_runs_is_not_taken(s3_root):
    """Under spark-submit the JVM is the driver's parent and lives on after it: the lease
    stays taken while the JVM it names runs, here or after its expiry."""
    ledger = Locations.resolve("clickstream", root=s3_root).ledger
    bucket, key = split_bucket(f"{ledger}/lock")
    with S3Lease(ledger, "clickstream", lease_s=60):
        left = json.loads(s3.client().get_object(Bucket=bucket, Key=key)["Body"].read())
    jvm = subprocess.Popen(["sleep", "60"])
    try:
        with_jvm = {**left, "pid": _dead_pid(), "spark": {"pid": jvm.pid, "started": _started(jvm.pid)}}
        s3.client().put_object(Bucket=bucket, Key=key, Body=json.dumps(with_jvm).encode())
        with pytest.raises(AlreadyRunning):
            S3Lease(ledger, "clickstream", lease_s=1).__enter__()
    finally:
        jvm.kill()
        jvm.wait()
    with S3Lease(ledger, "clickstream", lease_s=60):
        pass


def _started(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
