"""One filesystem interface for local folders and S3 buckets (pyarrow.fs).

Everything the product reads or writes outside Spark goes through here: the ledger,
run reports, validation results, the report pages, landed files. A location is a local
path or an s3a:// URI (jobs/lake/layout.py); callers never branch on which.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pyarrow import fs as pafs

from jobs.lake import s3
from jobs.lake.layout import StorageError, is_s3, local_path, split_bucket
from jobs.settings import settings

_LOCAL = pafs.LocalFileSystem()
T = TypeVar("T")
# The AWS C++ SDK in pyarrow writes the body of an error answer into the buffer a read hands
# it, sized to what is read: a throttling or 5xx answer (a few hundred bytes of XML) to a
# read of a small object overflows it, and comes back as an error the SDK does not retry.
# A read can be made again; the SDK retries the same answer to a larger read itself.
_MISREAD = "Failed to flush response stream"


def _resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    if is_s3(uri):
        return s3.filesystem(), uri.removeprefix("s3a://")
    return _LOCAL, str(local_path(uri))


def filesystem_of(uri: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem of a location and its path there (for pyarrow's readers)."""
    return _resolve(uri)


@contextlib.contextmanager
def errors(uri: str) -> Iterator[None]:
    """OS and S3 errors as one line that names the location and the cause."""
    try:
        yield
    except StorageError:
        raise
    except OSError as error:
        if is_s3(uri):
            raise s3.explain(error, uri) from None
        reason = error.strerror or str(error).splitlines()[0]
        raise StorageError(f"{uri}: {reason}") from None


def exists(uri: str) -> bool:
    """A file, or a folder (on S3: a prefix with at least one object under it)."""
    filesystem, path = _resolve(uri)
    with errors(uri):
        return filesystem.get_file_info(path).type != pafs.FileType.NotFound


def listable(uri: str) -> bool:
    """Whether `uri` can be listed as a folder: a local folder that exists, or any prefix in
    a bucket that exists (on S3 a prefix exists only once an object is under it: before,
    and after retention moved the last file away, it is an empty folder)."""
    if is_s3(uri):
        return exists(uri) or s3.bucket_exists(split_bucket(uri)[0])
    return exists(uri)


def size(uri: str) -> int | None:
    """A file's size in bytes; None if it is not there."""
    filesystem, path = _resolve(uri)
    with errors(uri):
        info = filesystem.get_file_info(path)
    return None if info.type == pafs.FileType.NotFound else info.size


def _read_again_if_misread(read: Callable[[], T]) -> T:
    """`read()`, made again (with backoff, up to JOBS_S3_ATTEMPTS times) when the SDK
    failed it on an error answer it could not hold (_MISREAD)."""
    attempts = settings().s3_attempts
    for attempt in range(1, attempts + 1):
        try:
            return read()
        except OSError as error:
            if _MISREAD not in str(error) or attempt == attempts:
                raise
            time.sleep(random.uniform(0, min(2.0, 0.1 * 2**attempt)))
    raise AssertionError("unreachable")


def read_bytes(uri: str) -> bytes:
    filesystem, path = _resolve(uri)

    def read() -> bytes:
        with filesystem.open_input_stream(path) as stream:
            return stream.read()

    with errors(uri):
        return _read_again_if_misread(read)


def read_json_if_there(uri: str) -> Any:
    """A JSON file's value, or None when there is none. On S3 one GET (pyarrow asks with a
    HEAD first, whose error has no body: a refused credential would read as a server error)."""
    if is_s3(uri):
        return s3.read_json_if_there(uri)
    filesystem, path = _resolve(uri)
    with errors(uri):
        try:
            with filesystem.open_input_stream(path) as stream:
                return json.loads(stream.read())
        except FileNotFoundError:
            return None


def read_chunks(uri: str, end: int, size: int = 8 * 2**20, *, compressed: bool = False) -> Iterator[bytes]:
    """The first `end` bytes of a file (fewer if it is shorter), in chunks of `size`: of a
    gzip file ('.gz'), its lines decompressed, unless `compressed`."""
    filesystem, path = _resolve(uri)
    with errors(uri), filesystem.open_input_stream(path, compression=None if compressed else "detect") as stream:
        while end > 0:
            chunk = stream.read(min(size, end))
            if not chunk:
                return
            end -= len(chunk)
            yield chunk


def read_text(uri: str) -> str:
    return read_bytes(uri).decode()


def read_json(uri: str) -> Any:
    return json.loads(read_bytes(uri))


def _read_umask() -> int:
    umask = os.umask(0o077)
    os.umask(umask)
    return umask


# What the product writes on a local disk (quarantined lines, run reports, the report's pages, its
# ledger) holds producers' values: readable by its owner and group only, whatever the umask
# allows beyond (docs/storage.md, "Where, and how long").
PRIVATE_MODE = 0o660 & ~_read_umask()


def write_bytes(uri: str, data: bytes) -> None:
    """Write a whole file so that readers see the old content or the new, never half: one
    object on S3; a hidden temporary file renamed into place on a local disk (PRIVATE_MODE)."""
    filesystem, path = _resolve(uri)
    with errors(uri):
        if filesystem is not _LOCAL:
            with filesystem.open_output_stream(path) as stream:
                stream.write(data)
            return
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.parent / f".{target.name}.{secrets.token_hex(4)}"
        try:
            with filesystem.open_output_stream(str(scratch)) as stream:
                stream.write(data)
            scratch.chmod(PRIVATE_MODE)
            filesystem.move(str(scratch), path)
        finally:
            scratch.unlink(missing_ok=True)


def write_text(uri: str, text: str) -> None:
    write_bytes(uri, text.encode())


def write_json(uri: str, value: Any) -> None:
    write_text(uri, json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def list_names(uri: str) -> list[str]:
    """Names directly under a folder (none if it does not exist), hidden ones and links left out
    (a `dt=` folder that is a link is no folder of the landing's: jobs/lake/listings.py)."""
    filesystem, path = _resolve(uri)
    with errors(uri):
        if filesystem is _LOCAL:
            try:
                with os.scandir(path) as entries:
                    names = [entry.name for entry in entries if not entry.is_symlink()]
            except (FileNotFoundError, NotADirectoryError):
                names = []
        else:
            names = [info.base_name for info in filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))]
    return sorted(name for name in names if not name.startswith("."))


def remove_file(uri: str) -> bool:
    """Delete one file; nothing if it is not there. Whether it was there."""
    filesystem, path = _resolve(uri)
    with errors(uri):
        if filesystem.get_file_info(path).type == pafs.FileType.NotFound:
            return False
        filesystem.delete_file(path)
    return True


def move_file(uri: str, to: str) -> None:
    """Move one file (on S3, or between a disk and a bucket: copy, then delete)."""
    source, source_path = _resolve(uri)
    target, target_path = _resolve(to)
    with errors(to):
        if target is _LOCAL:
            Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        pafs.copy_files(source_path, target_path, source_filesystem=source, destination_filesystem=target)
    with errors(uri):
        source.delete_file(source_path)


def remove_tree(uri: str) -> None:
    """Delete a folder and everything under it (on S3: every object under the prefix), or a file."""
    filesystem, path = _resolve(uri)
    with errors(uri):
        kind = filesystem.get_file_info(path).type
        if kind == pafs.FileType.File:
            filesystem.delete_file(path)
        elif kind != pafs.FileType.NotFound:
            filesystem.delete_dir(path)


def copy_tree(folder: Path, uri: str) -> None:
    """Copy a local folder's files to `uri`, keeping relative paths."""
    filesystem, path = _resolve(uri)
    with errors(uri):
        pafs.copy_files(str(folder), path, source_filesystem=_LOCAL, destination_filesystem=filesystem)


def parquet_counts(uri: str) -> tuple[int, dict[str, int]]:
    """Rows in one Parquet file, and per top-level column its null values, from its footer
    (one ranged read on S3; a column whose writer kept no statistics is left out)."""
    footer, nulls = _parquet_footer(uri), {}
    for group in range(footer.num_row_groups):
        for index in range(footer.num_columns):
            chunk = footer.row_group(group).column(index)
            stats = chunk.statistics
            if "." in chunk.path_in_schema or stats is None or not stats.has_null_count:
                continue  # a nested field's leaf counts values, not rows
            nulls[chunk.path_in_schema] = nulls.get(chunk.path_in_schema, 0) + stats.null_count
    return footer.num_rows, nulls


def parquet_key_value(uri: str, key: bytes) -> bytes | None:
    """One key's value in a Parquet file's footer (what a writer kept there), None if absent."""
    return (_parquet_footer(uri).metadata or {}).get(key)


def _parquet_footer(uri: str):
    import pyarrow.parquet as pq

    filesystem, path = _resolve(uri)

    def read():
        with filesystem.open_input_file(path) as handle:
            return pq.ParquetFile(handle).metadata

    with errors(uri):
        return _read_again_if_misread(read)
