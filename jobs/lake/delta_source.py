"""What Delta's streaming source read of a table: a reader of a Delta upstream (docs/graph.md).

Delta's source keeps no file log in the checkpoint, only its offset, one per batch:

    <checkpoint>/offsets/N   ... {"reservoirVersion": 7, "index": -1, "isStartingVersion": false}
                             batch N read everything before version 7

The product reads an upstream's versions whole (jobs/flow/source.py sets no limit of files a
batch), so a batch ends where a version starts, and its files are told from the table's own
log: a first batch read the table as it was at the version before its end (Delta's start is
that version's snapshot), a later one the files each version after the previous batch's end
added. Only data changes: a compaction's files hold rows read already. And not a version
that also removed rows: an upstream's rewrite, which the source skips (skipChangeCommits)
and the reader owes (jobs/run/owed.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from jobs.lake import delta
from jobs.lake.layout import join

BASE_INDEX = -1  # an offset at a version's start, before any of its files


@dataclass(frozen=True)
class Offset:
    """Where Delta's source is in a table: every version before `version` read."""

    version: int
    index: int = BASE_INDEX
    starting: bool = False  # inside the first snapshot (never at a whole version's end)


def offset_of(text: str) -> Offset | None:
    """A Delta source's offset as a checkpoint's offsets file holds it; None for another source's."""
    said = json.loads(text)
    if not isinstance(said, dict) or "reservoirVersion" not in said:
        return None
    return Offset(
        int(said["reservoirVersion"]), int(said.get("index", BASE_INDEX)), bool(said.get("isStartingVersion"))
    )


def files_read(table: str, before: Offset | None, through: Offset) -> dict[str, dict[str, Any]]:
    """Path -> `size` and `modificationTime` of the files the source read from offset `before`
    (None: its first batch) to `through`."""
    for offset in (before, through):
        if offset is not None and (offset.index != BASE_INDEX or offset.starting):
            raise ValueError(
                f"Delta's source stopped inside a version of table {table} ({offset}): "
                "the product reads whole versions and cannot tell its files"
            )
    if before is None:
        return delta.table_files(table, through.version - 1) if through.version > 0 else {}
    found: dict[str, dict[str, Any]] = {}
    for version in range(before.version, through.version):
        found |= added_by(table, version)
    return found


def added_by(table: str, version: int) -> dict[str, dict[str, Any]]:
    """The files version `version` added rows in, as a reader reads them; none if it is a rewrite."""
    actions = delta.commit(table, version)
    if rewrites(actions):
        return {}
    return {
        join(table, unquote(a["add"]["path"])): {
            "size": a["add"].get("size"),
            "modificationTime": a["add"].get("modificationTime"),
        }
        for a in actions
        if "add" in a and a["add"].get("dataChange", True)
    }


def rewrites(actions: list[dict[str, Any]]) -> bool:
    """Whether a version removed rows (a replacement, a delete): Delta's source skips it whole."""
    return any("remove" in a and a["remove"].get("dataChange", True) for a in actions)


def adding_versions(table: str) -> dict[str, int]:
    """Path -> the version that added it, for every file a version still in the log added."""
    found: dict[str, int] = {}
    for version in delta.versions(table):
        for action in delta.commit(table, version):
            if "add" in action and action["add"].get("dataChange", True):
                found.setdefault(join(table, unquote(action["add"]["path"])), version)
    return found


def appended_after(table: str, version: int) -> list[int]:
    """The versions after `version` that added rows (what a reader reads of them)."""
    return [v for v in delta.versions(table) if v > version and added_by(table, v)]


def newest_end(table: str) -> Offset:
    """The offset after the table's newest version: where a source that read it all is."""
    return Offset(max(delta.versions(table), default=-1) + 1)
