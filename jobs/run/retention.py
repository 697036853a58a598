"""Retention of landed files, as the declaration says (its `retention:` block).

After a run, the landed files of batches accounted more than `landed_after` ago are
deleted, or archived (moved to the archive location under the same relative path).
Only files the ledger names are touched, so never one whose batch is not committed and
accounted: recovering an interrupted run, which reads the files of batches committed
but not yet accounted, never needs a file retention removed. `_pipeline/retention.json`
remembers how far it got, so each run looks only at batches it has not yet looked at.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from jobs.accounting.file_ledger import accounts_after, files_of
from jobs.lake import fs
from jobs.lake.layout import is_inside, join
from jobs.run.context import RunContext
from jobs.run.report import RetentionDone


def apply_retention(run: RunContext, *, now: datetime | None = None) -> RetentionDone:
    """Delete or archive the landed files of the accounted batches old enough; returns what it did."""
    retention, ledger, checkpoint_log, locations = run.pipeline.retention, run.ledger, run.checkpoint_log, run.locations
    done = RetentionDone(archive=locations.archive if retention.landed == "archive" else None)
    if retention.landed == "keep":
        return done
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=retention.landed_after_s)
    seen_through = ledger.retention_mark()
    for expected, account in enumerate(accounts_after(ledger, seen_through), start=seen_through + 1):
        if account["batch_id"] != expected:
            break  # a batch not accounted yet (every committed batch gets an account, in order)
        committed = account.get("committed_at")
        if committed is None or datetime.fromisoformat(committed) > cutoff:
            break  # batches commit in order: the later ones are younger still
        for taken in files_of(account, checkpoint_log):
            path = taken["path"]
            if not is_inside(path, locations.landing):
                continue  # landed elsewhere (the landing moved): not this declaration's to remove
            if retention.landed == "delete":
                removed = fs.remove_file(path)
                done.deleted += removed
                done.already_gone += not removed
            elif fs.exists(path):
                fs.move_file(path, join(locations.archive, path.removeprefix(locations.landing).lstrip("/")))
                done.archived += 1
            else:
                done.already_gone += 1
        ledger.record_retention_mark(account["batch_id"])
        done.through_batch = account["batch_id"]
    if done.deleted or done.archived:
        run.log.info("  %s", done.describe())
    return done
