"""The landing source's file log, read only (io.triggeronce.jobs.source.FileLog writes it):

    <checkpoint>/sources/S/K              entry K: the files one batch took (Spark's own file source's
                                          form: a version line, then a JSON line a file: path, timestamp,
                                          batchId; K.compact files of Spark's source hold every entry so far)
    <checkpoint>/sources/S/folders/version  the index below is whole
    <checkpoint>/sources/S/folders/F/K    the files of landing folder F that entry K took (F/K.compact:
                                          all of them through K); F is `folder_key` of the folder's path
                                          under the landing

What was taken is asked of the folders a run lists, never of the whole history: a long-lived
landing's dated folders cost what the days a run lists hold. A checkpoint that Spark's own source
kept (no index yet) is read whole, as before, until the product's source first runs on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import msgspec

from jobs.lake import fs
from jobs.lake.layout import from_spark, join

TakenFiles = dict[str, int]  # location -> its modification time (ms) when the source took it


def folder_key(relative: str) -> str:
    """The index's name for a landing folder, from its path under the landing ('' for the
    landing itself): FileLog.key, the same bytes hashed."""
    return hashlib.sha256(relative.encode()).hexdigest()[:32]


def relative_folder(location: str, landing: str) -> str:
    """The folder `location` is in, under `landing` ('dt=2023-07-30', '' in the landing itself),
    or its whole path when outside it (FileLog.folderKey)."""
    folder = location.rsplit("/", 1)[0]
    root = landing.rstrip("/")
    if folder == root:
        return ""
    if folder.startswith(root + "/"):
        return folder[len(root) + 1 :]
    return folder


def _ids(names: list[str]) -> dict[int, str]:
    """Entry id -> file name ('7', '9.compact'): a plain entry before a compact one of the same id."""
    found: dict[int, str] = {}
    for name in names:
        stem = name.removesuffix(".compact")
        if stem.isdigit() and (int(stem) not in found or found[int(stem)].endswith(".compact")):
            found[int(stem)] = name
    return found


def log_entries(uri: str) -> list[dict[str, Any]]:
    """The JSON lines of one Spark metadata log file (its first line is a version), decoded
    as one array: a compaction of 100,000 files took 0.6-1.0 s line by line, 0.1 s so."""
    lines = fs.read_bytes(uri).splitlines()[1:]
    return msgspec.json.decode(b"[" + b",".join(line for line in lines if line.strip()) + b"]")


class SourceLog:
    """One source's file log in a checkpoint (`sources/S`), and the landing it lists."""

    def __init__(self, folder: str, landing: str):
        self.folder = folder
        self.landing = landing
        self._names: dict[int, str] | None = None

    @property
    def ids(self) -> dict[int, str]:
        if self._names is None:
            self._names = _ids(fs.list_names(self.folder))
        return self._names

    def head(self) -> int:
        """The newest entry (-1: none)."""
        return max(self.ids, default=-1)

    def indexed(self) -> bool:
        return fs.exists(join(self.folder, "folders", "version"))

    def taken_in(self, locations: Iterable[str]) -> TakenFiles:
        """Of the folders these files are in, every file the source took."""
        if not self.indexed():
            return self.all_taken()
        keys = {folder_key(relative_folder(location, self.landing)) for location in locations}
        return self._taken_by_keys(keys)

    def all_taken(self) -> TakenFiles:
        """Every file the source took: what a compact file of Spark's and the entries after it
        hold, before the index; the whole index after."""
        if self.indexed():
            return self._taken_by_keys(set(fs.list_names(join(self.folder, "folders"))) - {"version"}, every=True)
        ids = self.ids
        compact = max((i for i, name in ids.items() if name.endswith(".compact")), default=0)
        taken: TakenFiles = {}
        for i in sorted(ids):
            if i >= compact:
                for entry in log_entries(join(self.folder, ids[i])):
                    taken.setdefault(from_spark(entry["path"]), entry["timestamp"])
        return taken

    def _taken_by_keys(self, keys: set[str], *, every: bool = False) -> TakenFiles:
        head = self.head()
        taken: TakenFiles = {}
        for key in keys:
            part = join(self.folder, "folders", key)
            names = [n for n in fs.list_names(part) if n.removesuffix(".compact").isdigit()]
            compacts = [int(n.removesuffix(".compact")) for n in names if n.endswith(".compact")]
            compact = max((i for i in compacts if i <= head), default=-1)
            read = [f"{compact}.compact"] if compact >= 0 else []
            read += [
                n
                for n in sorted(names, key=lambda n: int(n.removesuffix(".compact")))
                if n.isdigit() and compact < int(n) <= head
            ]
            for name in read:  # a part past the head belongs to no entry (a run that stopped)
                for entry in log_entries(join(part, name)):
                    taken.setdefault(from_spark(entry["path"]), entry["timestamp"])
        if head >= 0 and self.ids[head].isdigit():  # the newest entry's parts may not be written yet
            for entry in log_entries(join(self.folder, self.ids[head])):
                location = from_spark(entry["path"])
                if every or folder_key(relative_folder(location, self.landing)) in keys:
                    taken.setdefault(location, entry["timestamp"])
        return taken
