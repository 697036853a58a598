"""What a folder holds, at any depth: the one listing every part of the product uses (a
landing's new files, the audit, retention, a rebuild, the plan, the table's files), and the
rule of what a run may read of a landing: its regular files, nothing else.

Spark lists by the same rule (the product's file systems, io.triggeronce.jobs.fs: links, fifos
and names the JVM cannot open left out locally, odd S3 keys left out of a bucket's listings), so
that the product's listing and Spark's never disagree (docs/storage.md, "What a run lists").
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from jobs.lake import fs, s3
from jobs.lake.layout import is_s3, local_path


@dataclass(frozen=True)
class Listing:
    """What a folder holds, at any depth: its files, and what a listing passes over and names.

    A file is a regular file (on S3 an object whose key, below the folder, has no empty, '.' or
    '..' segment): nothing else is ever read, counted or removed. A link may point anywhere
    (outside the landing, or at its own folder: a loop without end), and Hadoop folds a key
    like 'p/../../secret/x.json' into another place: both are `skipped`, named with why.
    Names starting with '.' or '_' are left out, unnamed (what Spark, pyarrow and DuckDB skip
    too). Spark lists by the same rule (the product's file systems: docs/storage.md)."""

    files: dict[str, tuple[int, int]]  # location -> (size in bytes, modification time in ms)
    skipped: dict[str, str] = field(default_factory=dict)  # location -> why it is not a file


SKIPPED_LINK = "a symbolic link (never followed)"
SKIPPED_KEY = "an S3 key with an empty, '.' or '..' segment (another place once Hadoop reads it)"
SKIPPED_SPECIAL = "not a regular file"
SKIPPED_NAME = "a name that is not UTF-8 text (which Spark cannot open)"


def listing(uri: str, leave_out: frozenset[str] = frozenset()) -> Listing:
    """Every file under a folder, at any depth, as locations like `uri`, and what was passed
    over; but for the folders directly under it named in `leave_out` (a dated landing's days
    already passed: jobs/run/pending.py)."""
    with fs.errors(uri):
        if is_s3(uri):
            return _s3_listing(uri) if not leave_out else _s3_listing_but(uri, leave_out)
        return _local_listing(uri, leave_out)


def _local_listing(uri: str, leave_out: frozenset[str] = frozenset()) -> Listing:
    """Folder by folder, never through a link (the folder `uri` itself is resolved once)."""
    files: dict[str, tuple[int, int]] = {}
    skipped: dict[str, str] = {}
    root = uri.rstrip("/")
    folders = [(str(local_path(uri)), root)]
    while folders:
        folder, location = folders.pop()
        try:
            entries = os.scandir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue  # not there (yet, or any more): nothing under it
        with entries:
            for entry in entries:
                if entry.name.startswith((".", "_")):
                    continue
                where = f"{location}/{entry.name}"
                if not _is_text(entry.name):
                    skipped[where] = SKIPPED_NAME
                elif entry.is_symlink():
                    skipped[where] = SKIPPED_LINK
                elif entry.is_dir(follow_symlinks=False):
                    if not (location == root and entry.name in leave_out):
                        folders.append((entry.path, where))
                elif entry.is_file(follow_symlinks=False):
                    stat = entry.stat(follow_symlinks=False)
                    files[where] = (stat.st_size, stat.st_mtime_ns // 10**6)
                else:
                    skipped[where] = SKIPPED_SPECIAL
    return Listing(dict(sorted(files.items())), skipped)


def _is_text(name: str) -> bool:
    """A name the operating system gave as UTF-8 (one that was not holds lone surrogates)."""
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def _s3_listing(uri: str) -> Listing:
    """One flat listing of the keys under the prefix, as S3 has them (pyarrow would drop a key
    with an odd segment without a word)."""
    files: dict[str, tuple[int, int]] = {}
    skipped: dict[str, str] = {}
    base = uri.rstrip("/")
    for relative, size, mtime_ms in s3.objects_under(base):
        segments = relative.split("/")
        if relative.endswith("/") or any(s.startswith((".", "_")) for s in segments if s not in (".", "..")):
            continue  # a folder's marker, or hidden
        where = f"{base}/{relative}"
        if any(segment in ("", ".", "..") for segment in segments):
            skipped[where] = SKIPPED_KEY
        else:
            files[where] = (size, mtime_ms)
    return Listing(dict(sorted(files.items())), skipped)


def _s3_listing_but(uri: str, leave_out: frozenset[str]) -> Listing:
    """The objects directly under the prefix, then each folder under it but those left out."""
    base = uri.rstrip("/")
    top, folders = Listing({}, {}), []
    for relative, size, mtime_ms in s3.objects_under(base, top_only=True):
        if not relative or relative.startswith((".", "_")):
            continue
        if relative.endswith("/"):
            folders.append(relative[:-1])
        else:
            top.files[f"{base}/{relative}"] = (size, mtime_ms)
    for name in folders:
        if name in leave_out or name in ("", ".", ".."):
            continue  # an odd segment: the whole listing names its keys (_s3_listing)
        found = _s3_listing(f"{base}/{name}")
        top.files.update(found.files)
        top.skipped.update(found.skipped)
    return Listing(dict(sorted(top.files.items())), top.skipped)


def is_file_inside(uri: str, folder: str) -> bool:
    """Whether `uri` is a regular file inside `folder`, links resolved (on S3: a key below the
    folder's prefix with no odd segment); one that is not there counts as inside. What
    retention asks before it deletes or moves a landed file: never one outside the landing."""
    if is_s3(uri):
        relative = uri.removeprefix(folder.rstrip("/") + "/")
        return relative != uri and not any(segment in ("", ".", "..") for segment in relative.split("/"))
    path = local_path(uri)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
    except FileNotFoundError:
        return True  # already gone, unless a folder on its way is a link
    real, inside = os.path.realpath(path), os.path.realpath(local_path(folder))
    return real.startswith(inside.rstrip(os.sep) + os.sep)


def list_files(uri: str) -> list[str]:
    """Every file under a folder, at any depth, as locations like `uri` (as `listing`)."""
    return list(listing(uri).files)


def modification_times(uri: str) -> dict[str, int]:
    """Every file under a folder (as `listing`) -> its modification time, in ms."""
    return {location: mtime_ms for location, (_, mtime_ms) in listing(uri).files.items()}


def sizes_and_times(uri: str) -> dict[str, tuple[int, int]]:
    """Every file under a folder (as `listing`) -> (its size in bytes, its modification time in ms)."""
    return listing(uri).files
