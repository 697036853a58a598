"""Where a pipeline's data lives, and the only code that touches those places directly.

The layout under one root (the product's contract, see README "Data layout"):
    <root>/landing/<pipeline>/      producers land newline-delimited JSON files here
    <root>/tables/<pipeline>/       the output table (Parquet, with Spark's _spark_metadata log)
    <root>/checkpoints/<pipeline>/  Spark's checkpoint, plus _pipeline/ (declaration, lock, ledger)
    <root>/quarantine/<pipeline>/   records that could not be used, with file, line and reason
    <root>/runs/<pipeline>/         one JSON run report per run, and its validation results
    <root>/quality/                 the Great Expectations project (suites, results) of all pipelines
    <root>/reports/                 the data quality report: index.html and the Data Docs site
    <root>/dimensions/              dimension tables that pipelines join events with (e.g. users.csv)
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

from jobs import s3

DEFAULT_ROOT = "./data"


class StorageError(RuntimeError):
    """A location cannot be used as asked."""


class AlreadyRunning(RuntimeError):
    """Another run holds the pipeline's checkpoint."""


def is_s3(uri: str) -> bool:
    return uri.startswith("s3a://")


def normalize(uri: str) -> str:
    """Local paths become absolute paths; s3:// and s3a:// become s3a://bucket/prefix."""
    if "://" in uri:
        scheme, rest = uri.split("://", 1)
        if scheme in s3.SCHEMES:
            if not rest.split("/", 1)[0]:
                raise StorageError(f"{uri}: no bucket; use s3a://bucket/prefix")
            return f"s3a://{rest.rstrip('/')}"
        if scheme != "file":
            raise StorageError(f"{uri}: use a local path or s3a://bucket/prefix (got a {scheme}:// location)")
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
    dimensions: str = ""

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
            # Great Expectations keeps its project in a local folder, also when the root is a bucket.
            quality=join(base, "quality")
            if not is_s3(base)
            else join(normalize(DEFAULT_ROOT), "quality", *s3.split(base)),
            reports=normalize(reports) if reports else join(base, "reports"),
            dimensions=join(base, "dimensions"),
        )

    @property
    def uses_s3(self) -> bool:
        return any(is_s3(uri) for uri in (self.landing, self.output, self.checkpoint, self.quarantine, self.runs))

    @property
    def pipeline_dir(self) -> str:
        """The runner's own files beside Spark's in the checkpoint."""
        return join(self.checkpoint, "_pipeline")


def local_path(uri: str) -> Path:
    if is_s3(uri):
        raise StorageError(f"{uri}: this needs a local folder, not a bucket")
    if uri.startswith("file:"):
        return Path(unquote(urlparse(uri).path))
    return Path(uri)


def _s3(uri: str, action):
    """Runs `action(client, bucket, key)`, turning S3 errors into one actionable line."""
    bucket, key = s3.split(uri)
    try:
        return action(s3.client(), bucket, key)
    except Exception as error:
        if type(error).__module__.startswith(("botocore", "boto3")):
            raise StorageError(str(s3.explain(error, uri))) from None
        raise


def exists(uri: str) -> bool:
    """A file, or a folder (on S3: a prefix with at least one object under it)."""
    if not is_s3(uri):
        return local_path(uri).exists()

    def probe(client, bucket, key):
        if not key:
            client.head_bucket(Bucket=bucket)
            return True
        # "landing" must not match a sibling such as "landing-old/": list under "landing/" only.
        if client.list_objects_v2(Bucket=bucket, Prefix=f"{key}/", MaxKeys=1).get("KeyCount", 0):
            return True
        return client.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1).get("Contents", [{}])[0].get("Key") == key

    return _s3(uri, probe)


def read_text(uri: str) -> str:
    if not is_s3(uri):
        return local_path(uri).read_text()
    return _s3(uri, lambda client, bucket, key: client.get_object(Bucket=bucket, Key=key)["Body"].read().decode())


def list_names(uri: str) -> list[str]:
    """Names directly under a folder (none if it does not exist), hidden ones left out."""
    if not is_s3(uri):
        path = local_path(uri)
        if not path.is_dir():
            return []
        return sorted(name for name in os.listdir(path) if not name.startswith("."))

    def listing(client, bucket, key):
        prefix = f"{key}/" if key else ""
        names = set()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
            names.update(o["Key"][len(prefix) :] for o in page.get("Contents", []))
            names.update(p["Prefix"][len(prefix) :].rstrip("/") for p in page.get("CommonPrefixes", []))
        return sorted(n for n in names if n and not n.startswith("."))

    return _s3(uri, listing)


def dated_folders(landing: str, since: date, until: date | None = None) -> list[str]:
    """The landing's dt=YYYY-MM-DD folders from `since` to `until` (both included), from one
    listing of the top level only."""
    first, last = f"dt={since.isoformat()}", f"dt={until.isoformat()}" if until else None
    return [n for n in list_names(landing) if n.startswith("dt=") and n >= first and (last is None or n <= last)]


def write_text(uri: str, text: str) -> None:
    """Write a whole file so that readers see the old content or the new, never half."""
    if is_s3(uri):
        # One PUT: S3 shows the whole new object or the old one.
        _s3(uri, lambda client, bucket, key: client.put_object(Bucket=bucket, Key=key, Body=text.encode()))
        return
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

    if not is_s3(uri):
        return pq.ParquetFile(local_path(uri)).metadata.num_rows

    def footer_rows(client, bucket, key):
        # The footer is at the end: its length, then "PAR1". Read just that, not the file.
        tail = client.get_object(Bucket=bucket, Key=key, Range="bytes=-8")["Body"].read()
        length = int.from_bytes(tail[:4], "little")
        footer = client.get_object(Bucket=bucket, Key=key, Range=f"bytes=-{length + 8}")["Body"].read()
        return pq.read_metadata(io.BytesIO(b"PAR1" + footer)).num_rows

    return _s3(uri, footer_rows)


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


class S3Lease:
    """One run per checkpoint at a time when the checkpoint is in a bucket.

    S3 has no flock. The lock is an object created with a conditional PUT
    (If-None-Match: *), so only one run can create it. The holder rewrites it every
    `lease_s / 3` seconds. A run that crashed stops doing so, and once its object is
    older than `lease_s`, the next run may take it over, again with a conditional PUT
    (If-Match on the stale copy's ETag), so two runs can never both take it.
    """

    def __init__(self, locations: Locations, pipeline: str, lease_s: float | None = None):
        self.uri = join(locations.pipeline_dir, "lock")
        self.pipeline = pipeline
        self.lease_s = lease_s or float(os.environ.get("JOBS_S3_LEASE_S", "300"))
        self._etag: str | None = None
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def _holder(self) -> bytes:
        started = datetime.now(UTC).isoformat(timespec="seconds")
        return f"pid {os.getpid()} on {socket.gethostname()}, renewed {started}\n".encode()

    def _put(self, **condition: str) -> bool:
        from botocore.exceptions import ClientError

        def put(client, bucket, key):
            try:
                return client.put_object(Bucket=bucket, Key=key, Body=self._holder(), **condition)["ETag"]
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") in (
                    "PreconditionFailed",
                    "412",
                    "ConditionalRequestConflict",
                ):
                    return None
                raise

        etag = _s3(self.uri, put)
        if etag is not None:
            self._etag = etag
        return etag is not None

    def __enter__(self) -> S3Lease:
        if not self._put(IfNoneMatch="*"):
            current = _s3(self.uri, lambda client, bucket, key: client.get_object(Bucket=bucket, Key=key))
            holder = current["Body"].read().decode().strip() or "unknown holder"
            age_s = (datetime.now(UTC) - current["LastModified"]).total_seconds()
            if age_s <= self.lease_s or not self._put(IfMatch=current["ETag"]):
                raise AlreadyRunning(
                    f"pipeline '{self.pipeline}' is already running on checkpoint {self.uri.rsplit('/', 2)[0]} "
                    f"({holder}); wait for it to finish, or stop it, then run again. A crashed run's lease "
                    f"expires {self.lease_s:.0f}s after it was last renewed"
                )
        self._heartbeat = threading.Thread(target=self._renew, name="s3-lease", daemon=True)
        self._heartbeat.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            # S3 unreachable for a moment: the next renewal tries again.
            with contextlib.suppress(StorageError):
                self._put(IfMatch=self._etag)

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
        with contextlib.suppress(StorageError):  # if S3 is unreachable, the lease simply expires
            _s3(self.uri, lambda client, bucket, key: client.delete_object(Bucket=bucket, Key=key))


def checkpoint_lock(locations: Locations, pipeline: str) -> CheckpointLock | S3Lease:
    """The lock that keeps two runs off one checkpoint, local or in a bucket."""
    if is_s3(locations.checkpoint):
        return S3Lease(locations, pipeline)
    return CheckpointLock(locations, pipeline)


def put_new_file(source: Path, uri: str) -> bool:
    """Upload a local file as a new object in one PUT; False if the name is already taken."""
    from botocore.exceptions import ClientError

    def put(client, bucket, key):
        try:
            with source.open("rb") as data:
                client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
            return True
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                return False
            raise

    return _s3(uri, put)


def upload_tree(folder: Path, uri: str) -> int:
    """Copy every file under a local folder to `uri`, keeping relative paths; returns the count."""
    files = [f for f in folder.rglob("*") if f.is_file()]
    for file in files:
        target = join(uri, file.relative_to(folder).as_posix())
        _s3(target, lambda client, bucket, key, file=file: client.upload_file(str(file), bucket, key))
    return len(files)


def remove_tree(uri: str) -> None:
    """Delete a folder (on S3: every object under the prefix)."""
    if not is_s3(uri):
        shutil.rmtree(local_path(uri), ignore_errors=True)
        return

    def delete(client, bucket, key):
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{key.rstrip('/')}/"):
            objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if objects:
                client.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})

    _s3(uri, delete)
