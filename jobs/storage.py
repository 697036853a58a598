"""Where a pipeline's data lives, and the only code that touches those places directly.

The layout under one root (the product's contract, see README "Data layout"):
    <root>/landing/<pipeline>/      producers land newline-delimited JSON files here
    <root>/tables/<pipeline>/       the output table (Parquet, with Spark's _spark_metadata log)
    <root>/checkpoints/<pipeline>/  Spark's checkpoint, plus _pipeline/ (declaration, lock, ledger)
    <root>/quarantine/<pipeline>/   records that could not be used, with file, line and reason
    <root>/runs/<pipeline>/         one JSON run report per run, and its validation results
    <root>/quality/                 the Great Expectations project (suites, results) of all pipelines
    <root>/reports/                 the data quality report: index.html and the Data Docs site
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

DEFAULT_ROOT = "./data"


class StorageError(RuntimeError):
    """A location cannot be used as asked."""


class AlreadyRunning(RuntimeError):
    """Another run holds the pipeline's checkpoint."""


def normalize(uri: str) -> str:
    """Local paths become absolute paths; URIs with a scheme are kept as they are."""
    if "://" in uri:
        scheme = uri.split("://", 1)[0]
        if scheme != "file":
            raise StorageError(f"{uri}: only local paths are supported so far (got a {scheme}:// location)")
        return str(Path(unquote(urlparse(uri).path)).resolve())
    return str(Path(uri).expanduser().resolve())


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])


@dataclass(frozen=True)
class Locations:
    landing: str
    output: str
    checkpoint: str
    quarantine: str
    runs: str
    quality: str
    reports: str

    @classmethod
    def resolve(
        cls,
        pipeline: str,
        root: str = DEFAULT_ROOT,
        landing: str | None = None,
        output: str | None = None,
        checkpoint: str | None = None,
        quarantine: str | None = None,
        runs: str | None = None,
        reports: str | None = None,
    ) -> Locations:
        """Each location defaults from the root, following the documented layout."""
        base = normalize(root)
        return cls(
            landing=normalize(landing) if landing else join(base, "landing", pipeline),
            output=normalize(output) if output else join(base, "tables", pipeline),
            checkpoint=normalize(checkpoint) if checkpoint else join(base, "checkpoints", pipeline),
            quarantine=normalize(quarantine) if quarantine else join(base, "quarantine", pipeline),
            runs=normalize(runs) if runs else join(base, "runs", pipeline),
            quality=join(base, "quality"),
            reports=normalize(reports) if reports else join(base, "reports"),
        )

    @property
    def pipeline_dir(self) -> str:
        """The runner's own files beside Spark's in the checkpoint."""
        return join(self.checkpoint, "_pipeline")


def local_path(uri: str) -> Path:
    if uri.startswith("file:"):
        return Path(unquote(urlparse(uri).path))
    return Path(uri)


def exists(uri: str) -> bool:
    return local_path(uri).exists()


def read_text(uri: str) -> str:
    return local_path(uri).read_text()


def list_names(uri: str) -> list[str]:
    """Names directly under a folder (none if it does not exist), hidden ones left out."""
    path = local_path(uri)
    if not path.is_dir():
        return []
    return sorted(name for name in os.listdir(path) if not name.startswith("."))


def write_text(uri: str, text: str) -> None:
    """Write a whole file so that readers see the old content or the new, never half."""
    path = local_path(uri)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
        tmp.write(text)
        tmp.flush()
        os.fsync(tmp.fileno())
    os.replace(tmp.name, path)


def write_json(uri: str, value: object) -> None:
    write_text(uri, json.dumps(value, indent=2, sort_keys=True) + "\n")


def parquet_row_count(uri: str) -> int:
    """Rows in one Parquet file, from its footer."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(local_path(uri)).metadata.num_rows


class FolderLock:
    """Waits for, then holds, an exclusive flock on `<folder>/lock` (released on exit, however it ends)."""

    def __init__(self, folder: str):
        self.path = local_path(join(folder, "lock"))
        self._file = None

    def __enter__(self) -> FolderLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a+")
        fcntl.flock(self._file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


class CheckpointLock:
    """One run per checkpoint at a time, across processes.

    Spark does not stop two processes from running the same checkpoint. The lock is an
    exclusive flock on a file inside the checkpoint; the kernel releases it when the
    holder exits, however it exits, so a crashed run never leaves a stale lock behind.
    """

    def __init__(self, locations: Locations, pipeline: str):
        self.path = local_path(join(locations.pipeline_dir, "lock"))
        self.pipeline = pipeline
        self._file = None

    def __enter__(self) -> CheckpointLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # held open for the lock's lifetime
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown holder"
            handle.close()
            raise AlreadyRunning(
                f"pipeline '{self.pipeline}' is already running on checkpoint {self.path.parent.parent} "
                f"({holder}); wait for it to finish, or stop it, then run again"
            ) from None
        handle.seek(0)
        handle.truncate()
        started = datetime.now(UTC).isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {started}\n")
        handle.flush()
        self._file = handle
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._file is not None:
            self._file.truncate(0)
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None
