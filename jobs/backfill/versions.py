"""Publishing a staged backfill: versions and one pointer, so readers never see half a table.

    <publish_to>/versions/<backfill_id>/   a plain Parquet table, complete once _SUCCESS exists
    <publish_to>/_CURRENT.json            {"path": <the current version>, ...}
    <work root>/published.json            the same pointer and where it was published, for the report

Readers resolve the pointer (`current_version`), so they see the previous version or the
new one. Publishing keeps the previous version, for readers still reading it, and deletes
older ones.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jobs.backfill.plan import VERSIONS, BackfillError, BackfillPlan
from jobs.lake import fs
from jobs.lake.layout import join, normalize

POINTER = "_CURRENT.json"
PUBLISHED = "published.json"  # in the backfill's work root
REPLACED = "replaced.json"  # in the backfill's work root: its commit into a Delta table (replace.py)
SUMMARY = "_backfill.json"
KEEP_VERSIONS = 2  # the current one and the one before, which readers may still be reading


def publish(plan: BackfillPlan) -> dict[str, Any]:
    """Make the staged version current with one atomic pointer write; returns the pointer."""
    # The summary is written after the table's _SUCCESS: with both, the stage is complete.
    if not (fs.exists(join(plan.stage, "_SUCCESS")) and fs.exists(join(plan.stage, SUMMARY))):
        raise BackfillError(f"{plan.stage} is not a complete staged result; run the backfill (again) first")
    summary = fs.read_json(join(plan.stage, SUMMARY))
    pointer = {
        "path": plan.stage,
        "version": plan.backfill_id,
        "pipeline": plan.pipeline,
        "published_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "range": {"since": plan.since, "until": plan.until} if plan.since else {"prefixes": list(plan.prefixes)},
        **{k: summary[k] for k in ("rows", "emitted_rows", "held_rows", "first_window", "last_window")},
    }
    fs.write_json(join(plan.publish_to, POINTER), pointer)
    pointer["removed_versions"] = _prune(plan.publish_to, keep=plan.backfill_id)
    fs.write_json(join(plan.work_root, PUBLISHED), {**pointer, "publish_to": plan.publish_to})
    return pointer


def _prune(publish_to: str, keep: str) -> list[str]:
    """Delete versions older than the previous one; never the one just published."""
    versions = [v for v in fs.list_names(join(publish_to, VERSIONS)) if v != keep]
    # Backfill ids start with the trigger time, so names sort oldest first.
    older = versions[: max(0, len(versions) - (KEEP_VERSIONS - 1))]
    for version in older:
        fs.remove_tree(join(publish_to, VERSIONS, version))
    return older


def current_version(publish_to: str) -> str:
    """The path of the published version readers should read."""
    pointer = join(normalize(publish_to), POINTER)
    if not fs.exists(pointer):
        raise BackfillError(f"nothing published at {publish_to} yet (no {POINTER})")
    return fs.read_json(pointer)["path"]
