"""Landing files atomically, the way producers must (see README "Landing files").

A file appears in the landing location under its final name only once it is whole, and
never replaces one already there (the pipeline reads each name once). Locally it is
written under a hidden temporary name (Spark's file source skips names starting with '.'
or '_') and then linked into place, which fails if the name is taken. On S3 each file
is one PUT, which is atomic, made conditional (If-None-Match) for the same reason.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from datetime import date
from pathlib import Path

from jobs.lake import fs, s3
from jobs.lake.layout import folder_pattern, is_s3, join, literal, local_path, normalize
from jobs.units import UsageError

_ONE_NAME_ONCE = "the pipeline reads each name once, so give new data a new file name"


class LandingError(RuntimeError):
    pass


def land_lines(files: dict[str, list[str]], to: str, skip_existing: bool = False) -> list[str]:
    """Land each {name: lines} as a newline-delimited file, in order; with `skip_existing`,
    names already landed are left alone. Returns the landed paths.

    A name may start with a folder ('clicks/c-1.json'), for pipelines whose sources land
    in folders of their own (a stream-stream join)."""
    target = normalize(to)
    with tempfile.TemporaryDirectory() as scratch:
        landed = []
        for name, lines in files.items():
            folder, _, base = name.rpartition("/")
            destination = join(target, folder) if folder else target
            if skip_existing and fs.exists(join(destination, base)):
                continue
            path = Path(scratch) / base
            path.write_text("".join(f"{line}\n" for line in lines))
            landed += land_files([str(path)], destination)
        return landed


def land_files(files: list[str], to: str) -> list[str]:
    """Land each file under its own name in `to`; returns the landed paths."""
    uri = normalize(to)
    sources = [Path(f) for f in files]
    for source in sources:
        if not source.is_file():
            raise LandingError(f"{source}: not a file; nothing was landed")
        if source.name.startswith((".", "_")):
            raise LandingError(f"{source}: names starting with '.' or '_' are never read; rename it first")
        if fs.exists(join(uri, source.name)):
            raise LandingError(f"{join(uri, source.name)} already exists: {_ONE_NAME_ONCE}; nothing was landed")
    landed: list[str] = []
    previous_ms = 0
    for source in sources:
        target = join(uri, source.name)
        if is_s3(uri):
            new = s3.put_new_object(source, target)
        else:
            # Spark batches files by modification time alone (to the ms): each gets its own,
            # so that the files of one landing go into batches in the order given.
            previous_ms = max(time.time_ns() // 10**6, previous_ms + 1)
            new = _link_new(source, target, previous_ms)
        if not new:
            raise LandingError(f"{target} already exists: {_ONE_NAME_ONCE}; landed before it: {landed or 'nothing'}")
        landed.append(target)
    return landed


def _link_new(source: Path, target: str, modified_ms: int) -> bool:
    """Copy under a hidden name, then link it to its final name: atomic, and never over a file."""
    path = local_path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.") as scratch:
        with open(source, "rb") as data:
            shutil.copyfileobj(data, scratch)
        scratch.flush()
        os.fsync(scratch.fileno())
        os.chmod(scratch.name, 0o666 & ~_umask())
        os.utime(scratch.name, ns=(modified_ms * 10**6, modified_ms * 10**6))
        try:
            os.link(scratch.name, path)
        except FileExistsError:
            return False
    return True


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def dated_folders(landing: str, since: date, until: date | None = None) -> list[str]:
    """The landing's dt=YYYY-MM-DD folders from `since` to `until` (both included), from one
    listing of the top level only. Only a name that is exactly that is a date: producers name
    folders, and 'dt=2023-07-30,*' sorts inside a range too (`undated` names the others)."""
    return [
        name
        for name in fs.list_names(landing)
        if (day := folder_date(name)) is not None and since <= day and (until is None or day <= until)
    ]


def folder_date(name: str) -> date | None:
    """The date of a folder named exactly dt=YYYY-MM-DD, else None."""
    if not _DATED.fullmatch(name):
        return None
    try:
        return date.fromisoformat(name.removeprefix("dt="))
    except ValueError:  # dt=2023-02-30
        return None


def undated(names: list[str]) -> list[str]:
    """The names a date range never selects: neither dt=YYYY-MM-DD nor hidden ('_', '.')."""
    return [name for name in names if folder_date(name) is None and not name.startswith(("_", "."))]


_DATED = re.compile(r"dt=\d{4}-\d{2}-\d{2}", re.ASCII)


def landing_path(landing: str, glob: str | None = None, since: date | None = None, until: date | None = None) -> str:
    """What the source lists: the landing location, or only part of it.

    A long history under date-organised prefixes (landing/dt=2023-07-30/hour=10/...)
    would be listed in full by every run. `glob` (e.g. 'dt=2023-07-*/*') or `since` (only
    the dt=YYYY-MM-DD folders from that date on; `until` stops at a date, for backfills)
    narrow the listing. Files already processed are remembered by the checkpoint either
    way, so narrowing never reprocesses; it only keeps older files from being listed.
    """
    if glob and (since or until):
        raise UsageError("use --landing-glob or --landing-since/--landing-until, not both")
    if until and not since:
        raise UsageError("--landing-until needs --landing-since")
    if since and until and since > until:
        raise UsageError(f"--landing-since {since} is after --landing-until {until}")
    if glob:
        if glob.startswith("/") or ".." in glob.split("/"):
            raise UsageError(f"--landing-glob {glob!r}: give a pattern inside the landing location")
        return join(literal(landing), glob)  # the operator's pattern, under the landing as it is named
    if since:
        # One listing of the top level only, then the source lists just these folders.
        folders = dated_folders(landing, since, until)
        if not folders:
            return join(literal(landing), f"dt={since.isoformat()}")  # nothing yet: an empty folder lists nothing
        return join(literal(landing), any_of(folders))
    return folder_pattern(landing)


def any_of(names: list[str]) -> str:
    """A pattern that matches exactly these names."""
    escaped = [literal(name) for name in names]
    return escaped[0] if len(escaped) == 1 else "{" + ",".join(escaped) + "}"


def new_files_path(landing: str, files: tuple[str, ...]) -> str | None:
    """What the source lists when the run knows which files are new: their names under the
    landing location, level by level (`dt={a,b}/{x.json,y.json}`), so that a long history
    is not listed again for a few new files; None when they lie at different depths or a name
    holds a ':' (the landing is listed whole). The pattern may match a file taken before (another folder's
    name): the source's log passes it over, as it does when the whole landing is listed.
    A file that lands meanwhile is the next run's, as one landing a moment after any
    listing; a file gone meanwhile matches nothing."""
    parts = [file.removeprefix(landing.rstrip("/") + "/").split("/") for file in files]
    # Hadoop's glob makes each name it matches a path from a string, where 'a:b.json' reads as
    # a URI with a scheme and fails: such a name is found by listing the landing whole.
    if len({len(names) for names in parts}) != 1 or any(":" in name for names in parts for name in names):
        return None
    # Hadoop keeps a pattern's escapes only in braces without a '/' (a brace with one is
    # expanded first, its escapes lost): one brace per level.
    return join(literal(landing), "/".join(any_of(sorted(set(level))) for level in zip(*parts, strict=True)))


def source_landings(landing: str, source_names: list[str | None]) -> list[str]:
    """Where each source lands: the landing location, or with two sources (a join), a
    folder of each source's name under it."""
    return [landing] if len(source_names) == 1 else [join(landing, name) for name in source_names]
