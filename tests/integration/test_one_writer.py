"""Every writer of a pipeline's table takes the pipeline's lock: a backfill's replacement and
an OPTIMIZE started while a run commits its batches wait for the run, then commit after its
last batch, one at a time; the table equals the model. Local folders and a bucket (moto),
where Delta's log store assumes one writer at a time and the lock is all that keeps two
commits from taking one version.

The model is test_backfill_into_table's: each reading in its two sliding windows, per rack."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

import pytest

from jobs import declare
from jobs.backfill.replace import replace_range
from jobs.backfill.stage import stage_closed_range
from jobs.declare.rules import Rule
from jobs.lake import delta, fs
from jobs.lake.layout import Locations, StorageError, is_s3, join
from jobs.lake.locks import AlreadyRunning, checkpoint_lock, holder
from jobs.run.maintain import maintain
from tests.helpers import land, run_closed_range, run_pipeline
from tests.integration.test_backfill_into_table import DAYS, day_readings, model, on, request_of, rows_of
from tests.integration.test_delta import reading


@pytest.fixture(params=["local", "s3"])
def store_root(request, tmp_path) -> str:
    if request.param == "local":
        return str(tmp_path / "root")
    return request.getfixturevalue("s3_root")


def land_days(locations: Locations, days) -> None:
    """A file per day, in order: one-file batches then see the days in order (S3 orders by
    whole seconds)."""
    for day in days:
        lines = [reading(rack, at, temperature) for rack, at, temperature in day_readings(day)]
        land(join(locations.landing, f"dt={day.date()}"), {f"readings-{day.date()}.json": lines})
        time.sleep(1.1 if is_s3(locations.landing) else 0.02)


def lock_holder(ledger: str) -> dict:
    try:
        return fs.read_json(join(ledger, "lock"))
    except (OSError, ValueError, StorageError):  # not written yet, or emptied by its release
        return {}


def operations(output: str) -> list[tuple[int, str, str]]:
    """(version, operation, userMetadata) of each commit, in order."""
    found = []
    for version in delta.versions(output):
        for action in delta.commit(output, version):
            if "commitInfo" in action:
                info = action["commitInfo"]
                found.append((version, info["operation"], info.get("userMetadata", "")))
    return found


def test_a_replacement_and_an_optimize_started_during_a_run_wait_for_it_and_commit_after(spark, store_root, caplog):
    root = store_root
    shipped = declare.load("rack_temperatures")  # the fix; production quarantines above 60 degrees
    wrong = Rule(name="physical_temperature", check="temperature BETWEEN -50 AND 60", on_violation="quarantine")
    strict = shipped.model_copy(update={"rules": (wrong,)})
    production = Locations.resolve("rack_temperatures", root=root)
    land_days(production, DAYS[:3])
    assert run_pipeline(spark, strict, production).status == "succeeded"
    request = request_of(shipped, root, "fix-1", since="2023-07-29", until="2023-07-29")
    run_closed_range(spark, shipped, request.locations, landing_since=DAYS[1].date(), landing_until=DAYS[1].date())
    stage_closed_range(spark, shipped, request.locations, request.stage)
    versions_before = delta.versions(production.output)[-1]

    # Two more days, a batch each; the writers start once the run's query holds the lock.
    land_days(production, DAYS[3:5])
    done: dict[str, object] = {}

    def when_the_run_holds_the_lock(name: str, write) -> threading.Thread:
        def write_during_the_run() -> None:
            deadline = time.monotonic() + 120
            while "spark" not in lock_holder(production.ledger) and time.monotonic() < deadline:
                time.sleep(0.05)
            try:
                done[name] = write()
            except Exception as error:  # noqa: BLE001 (the assertion below shows it)
                done[name] = error

        thread = threading.Thread(target=write_during_the_run)
        thread.start()
        return thread

    caplog.set_level(logging.WARNING, logger="jobs.lake.locks")
    writers = [
        when_the_run_holds_the_lock("replace", lambda: replace_range(spark, shipped, request, production)),
        when_the_run_holds_the_lock("optimize", lambda: maintain(spark, strict, production, {})),
    ]
    report = run_pipeline(spark, strict, production, max_files_per_trigger=1)
    for writer in writers:
        writer.join(timeout=600)
    assert report.status == "succeeded" and report.input_files == 2
    assert not any(isinstance(result, Exception) for result in done.values()), done

    # Serialized: both waited for the run, and committed after its last batch.
    waits = [r.getMessage() for r in caplog.records if "waits for run" in r.getMessage()]
    assert any(m.startswith("  lock: backfill replace waits") for m in waits), waits
    assert any(m.startswith("  lock: OPTIMIZE and VACUUM waits") for m in waits), waits
    assert done["optimize"].waited_s >= 0.5  # at least one of the lock's waits (an unwaited lock says about 0)
    after = [(v, op, meta) for v, op, meta in operations(production.output) if v > versions_before]
    streamed = [v for v, op, meta in after if op == "WRITE" and '"stream"' in meta]
    replaced = [v for v, op, meta in after if op == "WRITE" and "fix-1" in meta]
    optimized = [v for v, op, _ in after if op == "OPTIMIZE"]
    assert len(streamed) == report.batches >= 2 and replaced == [done["replace"].version] and len(optimized) == 1
    assert max(streamed) < min(replaced[0], optimized[0])

    # The table equals the model: the fixed day, the others as the production rule lets them.
    rows = rows_of(production.output)
    assert on(DAYS[1], rows) == model(day_readings(DAYS[1]), hottest=150)
    for day in (DAYS[0], DAYS[2], DAYS[3]):
        assert on(day, rows) == model(day_readings(day), hottest=60)


def test_a_holder_that_has_not_said_who_it_is_yet_is_waited_for_not_refused(tmp_path):
    """The moments a holder holds the flock with its record empty (just taken): a run meeting
    it tries again, and takes the lock once it is free."""
    import fcntl

    ledger = Locations.resolve("clickstream", root=str(tmp_path)).ledger
    lock_file = Path(ledger, "lock")
    lock_file.parent.mkdir(parents=True)
    with open(lock_file, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # held, its record empty
        threading.Timer(0.5, fcntl.flock, (held, fcntl.LOCK_UN)).start()
        with checkpoint_lock(ledger, "clickstream", wait_s=30) as run:
            assert 0.4 < run.waited_s < 2


def test_a_holder_lets_go_with_a_record_that_says_so_and_claims_no_jvm(store_root):
    """Before, a flock's holder wiped its record before letting go, so a writer meeting it in
    that moment read an empty record and had to guess. Now the record, while still held, says
    it was released and claims no JVM: a process that runs on (a group's application, this
    test's) is never waited for, and nobody holds the lock after."""
    ledger = Locations.resolve("clickstream", root=store_root).ledger
    with checkpoint_lock(ledger, "clickstream") as run:
        run.record_spark(os.getpid())  # a JVM that lives on after the run lets go
        held = run.holder()
        assert held is not None and held.spark.pid == os.getpid() and held.pid == os.getpid()
    assert run.holder() is None and holder(ledger) is None
    if not is_s3(ledger):  # a lease's object is deleted instead
        left = json.loads(Path(ledger, "lock").read_text())
        assert left["released"] and "spark" not in left and left["pid"] == os.getpid()
    started = time.monotonic()
    with checkpoint_lock(ledger, "clickstream") as again:
        assert again.waited_s < 1
    assert time.monotonic() - started < 5, "not waited for the JVM that runs on"


def test_a_run_meeting_a_run_is_refused_at_once_and_any_other_meeting_waits(store_root):
    ledger = Locations.resolve("clickstream", root=store_root).ledger
    with checkpoint_lock(ledger, "clickstream", wait_s=30):
        started = time.monotonic()
        with pytest.raises(AlreadyRunning, match="'clickstream' is already running"):
            checkpoint_lock(ledger, "clickstream", wait_s=30).__enter__()
        assert time.monotonic() - started < 5  # at once, however long it may wait for others
        with pytest.raises(AlreadyRunning, match=r"\(waited 1s\)$"):
            checkpoint_lock(ledger, "clickstream", "OPTIMIZE and VACUUM", wait_s=1).__enter__()

    # Upkeep holds it: a run waits, and goes ahead once the upkeep is done.
    order: list[str] = []
    upkeep = checkpoint_lock(ledger, "clickstream", "OPTIMIZE and VACUUM").__enter__()

    def upkeep_done() -> None:
        order.append("upkeep done")
        upkeep.__exit__(None, None, None)

    threading.Timer(1.5, upkeep_done).start()
    with checkpoint_lock(ledger, "clickstream", wait_s=30) as run:
        order.append("run")
    assert order == ["upkeep done", "run"] and run.waited_s >= 1.4
