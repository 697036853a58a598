"""Retention, as the declaration says (its `retention:` block; docs/storage.md).

After a run, the landed files of batches accounted more than `landed_after` ago are
deleted, or archived (moved to the archive location under the same relative path); the
builds a rebuild switched away from more than `previous_build` ago are removed (their
checkpoint, quarantine and Parquet table; the checkpoint's `retired.json` stays, so that
nothing resumes it); the quarantined records of batches accounted more than `quarantine`
ago are removed; and run reports (with their validation results) older than `runs`, but
the newest (the validation removes Great Expectations' own results of them:
jobs/validate/gx.py).
Only files the ledger names are touched, so never one whose batch is not committed and
accounted: recovering an interrupted run, which reads the files of batches committed
but not yet accounted, never needs a file retention removed. `_pipeline/retention.json`
remembers how far it got, so each run looks only at batches it has not yet looked at.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from jobs.accounting.file_ledger import accounts_after, files_of
from jobs.accounting.ledger import Ledger
from jobs.lake import fs, listings
from jobs.lake.layout import is_inside, join
from jobs.run.context import RunContext
from jobs.run.readers import taken_by_every_reader
from jobs.run.report import RESULTS_SUFFIX, RetentionDone
from jobs.units import named_before


def apply_retention(run: RunContext, *, now: datetime | None = None) -> RetentionDone:
    """Delete or archive the landed files of the accounted batches old enough, and remove
    the previous builds kept long enough; returns what it did."""
    now = now or datetime.now(UTC)
    done = RetentionDone(archive=run.locations.archive if run.pipeline.retention.landed == "archive" else None)
    if run.pipeline.retention.landed != "keep" and run.pipeline.source.table is None:  # a table's files are its own
        _landed_files(run, now, done)
    _previous_builds(run, now, done)
    _quarantine(run, now, done)
    _runs(run, now, done)
    if done.did_something:
        run.log.info("  %s", done.describe())
    return done


def _quarantine(run: RunContext, now: datetime, done: RetentionDone) -> None:
    """The quarantine's batch folders, oldest first, up to the first batch accounted too recently."""
    cutoff = now - timedelta(seconds=run.pipeline.retention.quarantine_after_s)
    quarantine, accounted = run.locations.quarantine, run.ledger.accounted_batches()
    batches = sorted(int(name[len("batch_id=") :]) for name in fs.list_names(quarantine) if _BATCH.fullmatch(name))
    for batch in batches:
        committed = run.ledger.committed_at(batch) if batch in accounted else None
        if committed is None or datetime.fromisoformat(committed) > cutoff:
            break  # batches commit in order: the later ones are younger still
        fs.remove_tree(join(quarantine, f"batch_id={batch}"))
        done.quarantine_batches_removed += 1


def _runs(run: RunContext, now: datetime, done: RetentionDone) -> None:
    """Run reports and validation results named by a time before the cutoff, but the newest run's."""
    cutoff = now - timedelta(seconds=run.pipeline.retention.runs_after_s)
    names = fs.list_names(run.locations.runs)
    reports = sorted(name for name in names if name.endswith(".json") and not name.endswith(RESULTS_SUFFIX))
    newest = reports[-1].removesuffix(".json") if reports else None
    for name in names:
        if not named_before(name, cutoff) or name.startswith(f"{newest}."):
            continue
        fs.remove_file(join(run.locations.runs, name))
        done.runs_removed += not name.endswith(RESULTS_SUFFIX)


_BATCH = re.compile(r"batch_id=\d+")


def _previous_builds(run: RunContext, now: datetime, done: RetentionDone) -> None:
    kept = run.ledger.previous_builds()
    cutoff = now - timedelta(seconds=run.pipeline.retention.previous_build_s)
    for build in kept:
        if build.get("removed_at") or datetime.fromisoformat(build["since"]) > cutoff:
            continue
        checkpoint, ledger = build["checkpoint"], join(build["checkpoint"], "_pipeline")
        if checkpoint == run.locations.checkpoint or not Ledger(ledger).retired():
            continue  # in use again (a rollback): never one a run may resume
        for name in fs.list_names(checkpoint):  # all but the ledger's retired.json (and its lock)
            if name != "_pipeline":
                fs.remove_tree(join(checkpoint, name))
        for name in fs.list_names(ledger):
            if name not in ("retired.json", "lock"):
                fs.remove_tree(join(ledger, name))
        for folder in (build["quarantine"], build.get("output")):
            if folder and folder != run.locations.output:
                fs.remove_tree(folder)
        build["removed_at"] = now.isoformat(timespec="seconds")
        done.builds_removed.append(build["build"])
    if done.builds_removed:
        run.ledger.record_previous_builds(kept)


def _landed_files(run: RunContext, now: datetime, done: RetentionDone) -> None:
    retention, ledger, checkpoint_log, locations = run.pipeline.retention, run.ledger, run.checkpoint_log, run.locations
    cutoff = now - timedelta(seconds=retention.landed_after_s)
    seen_through = ledger.retention_mark()
    every_reader = taken_by_every_reader(run.pipeline, locations)  # a shared landing: None when unshared
    for expected, account in enumerate(accounts_after(ledger, seen_through), start=seen_through + 1):
        if account["batch_id"] != expected:
            break  # a batch not accounted yet (every committed batch gets an account, in order)
        committed = account.get("committed_at")
        if committed is None or datetime.fromisoformat(committed) > cutoff:
            break  # batches commit in order: the later ones are younger still
        files = files_of(account, checkpoint_log)
        if every_reader is not None and any(
            f["path"] not in every_reader for f in files if is_inside(f["path"], locations.landing)
        ):
            break  # another reader of the shared landing has not read them all yet: a later run looks again
        for taken in files:
            path = taken["path"]
            if not is_inside(path, locations.landing):
                continue  # landed elsewhere (the landing moved): not this declaration's to remove
            if not listings.is_file_inside(path, locations.landing):
                done.left_alone.append(path)  # a link now, or one taken through a link: never followed
                continue
            if retention.landed == "delete":
                removed = fs.remove_file(path)
                done.deleted += removed
                done.already_gone += not removed
            elif fs.exists(path):
                fs.move_file(path, locations.archived_name(path))
                done.archived += 1
            else:
                done.already_gone += 1
        ledger.record_retention_mark(account["batch_id"])
        done.through_batch = account["batch_id"]
