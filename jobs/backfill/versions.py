"""Publishing a staged backfill: versions and one pointer, so readers never see half a table.

    <publish_to>/versions/<backfill_id>/   a plain Parquet table, complete once _SUCCESS exists
    <publish_to>/_CURRENT.json            {"id": <backfill id>, "path": <the current version>, ...}
                                          (jobs/lake/pointer.py: the format a build's pointer has too)
    <work root>/published.json            the same pointer and where it was published, for the report

Readers resolve the pointer (`current_version`), so they see the previous version or the
new one. Publishing keeps the previous version, for readers still reading it, and deletes
older ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from jobs.backfill.request import VERSIONS, BackfillError, BackfillRequest
from jobs.lake import fs, pointer
from jobs.lake.layout import join, normalize
from jobs.lake.pointer import NAME, Pointer

POINTER = NAME
PUBLISHED = "published.json"  # in the backfill's work root
REPLACED = "replaced.json"  # in the backfill's work root: its commit into a Delta table (replace.py)
SUMMARY = "_backfill.json"
KEEP_VERSIONS = 2  # the current one and the one before, which readers may still be reading


@dataclass(frozen=True)
class Published:
    """A staged version made current (<work root>/published.json says the same)."""

    pointer: Pointer
    publish_to: str
    removed_versions: list[str]

    def to_dict(self) -> dict:
        return self.pointer.to_dict() | {"removed_versions": self.removed_versions, "publish_to": self.publish_to}

    def said(self) -> str:
        return f"published: {self.publish_to}/{POINTER} -> {self.pointer.path}"


def is_staged(stage: str) -> bool:
    """Whether the reprocess step completed `stage`: the summary is written after the table's
    _SUCCESS, so with both the stage is complete."""
    return fs.exists(join(stage, "_SUCCESS")) and fs.exists(join(stage, SUMMARY))


def publish(request: BackfillRequest) -> Published:
    """Make the staged version current with one atomic pointer write."""
    if not is_staged(request.stage):
        raise BackfillError(f"{request.stage} is not a complete staged result; run the backfill (again) first")
    summary = fs.read_json(join(request.stage, SUMMARY))
    about = {
        "pipeline": request.pipeline,
        "range": {"since": request.since, "until": request.until}
        if request.since
        else {"prefixes": list(request.prefixes)},
        **{k: summary[k] for k in ("rows", "emitted_rows", "held_rows", "first_window", "last_window")},
    }
    published = Pointer(request.backfill_id, request.stage, datetime.now(UTC).isoformat(timespec="seconds"), about)
    pointer.write(request.publish_to, published)
    removed = _prune(request.publish_to, keep=request.backfill_id)
    done = Published(published, request.publish_to, removed)
    fs.write_json(join(request.work_root, PUBLISHED), done.to_dict())
    return done


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
    published = pointer.read(normalize(publish_to))
    if published is None:
        raise BackfillError(f"nothing published at {publish_to} yet (no {POINTER})")
    return published.path
