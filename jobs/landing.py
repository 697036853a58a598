"""Landing files atomically, the way producers must (see README "Landing files").

A file appears in the landing location under its final name only once it is whole.
Locally it is written under a hidden temporary name (Spark's file source skips names
starting with '.' or '_') and then renamed, which is atomic within one file system.
On S3 each file is one PUT, which is atomic, made conditional (If-None-Match) so that
an existing object is never overwritten.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from jobs import storage

_ONE_NAME_ONCE = "the pipeline reads each name once, so give new data a new file name"


class LandingError(RuntimeError):
    pass


def land_lines(files: dict[str, list[str]], to: str, skip_existing: bool = False) -> list[str]:
    """Land each {name: lines} as a newline-delimited file, in order; with `skip_existing`,
    names already landed are left alone. Returns the landed paths.

    A name may start with a folder ('clicks/c-1.json'), for pipelines whose sources land
    in folders of their own (a stream-stream join)."""
    folders = {name.split("/", 1)[0] for name in files if "/" in name}
    if folders:
        landed = land_lines({n: lines for n, lines in files.items() if "/" not in n}, to, skip_existing)
        for folder in sorted(folders):
            inside = {n.split("/", 1)[1]: lines for n, lines in files.items() if n.startswith(f"{folder}/")}
            landed += land_lines(inside, storage.join(to, folder), skip_existing)
        return landed
    target = storage.normalize(to)
    with tempfile.TemporaryDirectory() as scratch:
        paths = []
        for name, lines in files.items():
            if skip_existing and storage.exists(storage.join(target, name)):
                continue
            path = Path(scratch) / name
            path.write_text("".join(f"{line}\n" for line in lines))
            paths.append(str(path))
        return land_files(paths, to) if paths else []


def land_files(files: list[str], to: str) -> list[str]:
    """Land each file under its own name in `to`; returns the landed paths."""
    uri = storage.normalize(to)
    sources = [Path(f) for f in files]
    for source in sources:
        if not source.is_file():
            raise LandingError(f"{source}: not a file; nothing was landed")
        if source.name.startswith((".", "_")):
            raise LandingError(f"{source}: names starting with '.' or '_' are never read; rename it first")
        if storage.exists(storage.join(uri, source.name)):
            raise LandingError(f"{storage.join(uri, source.name)} already exists: {_ONE_NAME_ONCE}; nothing was landed")
    if storage.is_s3(uri):
        return _put_objects(sources, uri)
    target = storage.local_path(uri)
    target.mkdir(parents=True, exist_ok=True)
    landed = []
    for source in sources:
        with tempfile.NamedTemporaryFile(dir=target, prefix=f".{source.name}.", delete=False) as tmp:
            with open(source, "rb") as data:
                shutil.copyfileobj(data, tmp)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp.name, target / source.name)
        landed.append(str(target / source.name))
    return landed


def _put_objects(sources: list[Path], uri: str) -> list[str]:
    landed = []
    for source in sources:
        target = storage.join(uri, source.name)
        if not storage.put_new_file(source, target):
            raise LandingError(f"{target} already exists: {_ONE_NAME_ONCE}; landed before it: {landed or 'nothing'}")
        landed.append(target)
    return landed
