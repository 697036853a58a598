"""A checkpoint resumes only the query it was started with, and only one run at a time."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger
from jobs.declare.computing import Window
from jobs.lake.layout import Locations
from jobs.lake.locks import AlreadyRunning, CheckpointLock
from jobs.request import RunRequest, Trigger
from jobs.run import runner
from jobs.run.preflight import checkpoint_contract
from jobs.run.runner import RunRefused
from tests.helpers import REPO, event, land, run_pipeline

FIRST = {"a.json": [event("u1", "2023-07-30T10:00:20Z"), event("u1", "2023-07-30T10:09:20Z")]}
SECOND = {"b.json": [event("u2", "2023-07-30T10:20:00Z")]}


def checkpoint_files(locations: Locations) -> list[str]:
    root = Path(locations.checkpoint)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "_pipeline" not in p.parts)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"window": Window(duration_s="120 seconds", slide_s="120 seconds")}, "window_duration_s: 60 -> 120"),
        ({"keys": ("event",)}, "keys: ['user_id'] -> ['event']"),
        ({"aggregates": ()}, "aggregates"),
    ],
)
def test_an_incompatible_change_is_refused_before_anything_runs(spark, clickstream, locations, change, named):
    land(locations.landing, FIRST)
    run_pipeline(spark, clickstream, locations)
    land(locations.landing, SECOND)
    before = checkpoint_files(locations)

    with pytest.raises(RunRefused) as error:
        run_pipeline(spark, clickstream.model_copy(update=change), locations)

    message = str(error.value)
    assert named in message
    assert "To start fresh, move aside" in message and locations.checkpoint in message
    assert checkpoint_files(locations) == before  # nothing ran
    refused = json.loads(sorted(Path(locations.runs).glob("*.json"))[-1].read_text())
    assert refused["status"] == "refused" and named in refused["error"]


def test_compatible_changes_resume(spark, clickstream, locations):
    land(locations.landing, FIRST)
    run_pipeline(spark, clickstream, locations)
    land(locations.landing, SECOND)
    changed = clickstream.model_copy(update={"watermark_s": 600, "description": "new words"})

    report = run_pipeline(spark, changed, locations, trigger=Trigger("once"), max_files_per_trigger=5)

    assert report.status == "succeeded" and report.input_rows == 1


def test_a_second_run_on_a_held_checkpoint_refuses_to_start(spark, clickstream, locations):
    land(locations.landing, FIRST)
    with CheckpointLock(locations.ledger, clickstream.name), pytest.raises(RunRefused) as error:
        run_pipeline(spark, clickstream, locations)
    assert "already running" in str(error.value) and f"pid {__import__('os').getpid()}" in str(error.value)
    assert not CheckpointLog.of(locations).has_started()
    # Released: the next run goes ahead.
    assert run_pipeline(spark, clickstream, locations).status == "succeeded"


def test_a_new_checkpoint_on_an_existing_table_is_refused(spark, clickstream, locations, root):
    land(locations.landing, FIRST)
    run_pipeline(spark, clickstream, locations)
    moved = Locations.resolve(clickstream.name, root=str(root), checkpoint=str(root / "other-checkpoint"))

    with pytest.raises(RunRefused) as error:
        run_pipeline(spark, clickstream, moved)

    assert "already holds a table written under another checkpoint" in str(error.value)


def test_a_missing_landing_location_is_refused(spark, clickstream, locations):
    with pytest.raises(RunRefused) as error:
        run_pipeline(spark, clickstream, locations)
    assert f"landing location {locations.landing} does not exist" in str(error.value)


def test_a_landing_that_does_not_exist_is_said_so_not_as_a_change_to_rebuild(clickstream, locations, root):
    """A checkpoint started on its landing, then a run given a --landing that is not there:
    before, refused as a declaration change (`landing: A -> B`) to rebuild. Refused before
    Spark starts (`start_spark` off too, so no session can start here), changing nothing."""
    land(locations.landing, FIRST)
    Ledger(locations.ledger).record_contract(checkpoint_contract(clickstream, locations))  # as its first run did
    recorded = Path(locations.ledger, "declaration.json").read_text()
    typo = replace(locations, landing=str(root / "landing" / "clickstreem"))

    with pytest.raises(RunRefused) as refused:
        runner.run(clickstream, RunRequest(clickstream.name, typo, start_spark=False))

    said = str(refused.value)
    assert said.startswith(f"landing location {typo.landing} does not exist; ")
    assert f"reads landing {locations.landing}: run with --landing {locations.landing}" in said
    assert "changed since" not in said and "rebuild" not in said
    assert Path(locations.ledger, "declaration.json").read_text() == recorded
    assert not Path(typo.landing).exists()
    report = json.loads(next(Path(locations.runs).glob("*.json")).read_text())
    assert (report["status"], report["error"]) == ("refused", said)


def test_a_first_run_without_its_landing_gives_the_land_command_that_lands_there(clickstream, locations, root):
    with pytest.raises(RunRefused) as refused:
        runner.run(clickstream, RunRequest(clickstream.name, locations, start_spark=False))
    assert str(refused.value) == (
        f"landing location {root}/landing/clickstream does not exist; land files there first (python -m jobs "
        f"land FILE... --to {root}/landing/clickstream --root {root}) or pass --landing"
    )
    assert not root.exists(), "a run in the wrong place leaves no lock and no run report there"


# A run's process that took the lock and started its query's JVM (here a stand-in process).
_HOLDER = """
import subprocess, sys, time
from jobs.lake.locks import CheckpointLock
lock = CheckpointLock(sys.argv[1], "clickstream").__enter__()
jvm = subprocess.Popen(["sleep", "120"], start_new_session=True)
lock.record_spark(jvm.pid)
print(jvm.pid, flush=True)
time.sleep(120)
"""


def test_a_run_killed_alone_keeps_the_lock_taken_until_its_jvm_is_gone(tmp_path):
    """Under spark-submit the JVM is the Python driver's parent: killed alone, the driver
    releases its flock, while the JVM can still commit a batch. Before, the next run took
    the lock at once; now it waits for the JVM the lock names, and says so if it stays."""
    ledger = str(tmp_path / "ledger")
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, ledger], stdout=subprocess.PIPE, text=True, cwd=REPO)
    jvm = int(holder.stdout.readline())
    holder.kill()
    holder.wait()
    try:
        with pytest.raises(AlreadyRunning, match=rf"the JVM that ran its query \(pid {jvm}\) still runs"):
            CheckpointLock(ledger, "clickstream", jvm_wait_s=0.5).__enter__()
        threading.Timer(1.0, os.kill, (jvm, signal.SIGKILL)).start()
        started = time.monotonic()
        with CheckpointLock(ledger, "clickstream", jvm_wait_s=30):
            assert 0.8 < time.monotonic() - started < 20
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(jvm, signal.SIGKILL)
