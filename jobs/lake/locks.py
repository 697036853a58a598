"""One run per checkpoint at a time, and one writer per shared folder.

Spark does not stop two processes from running the same checkpoint: the runner takes
the checkpoint's lock first (`checkpoint_lock`), a flock on a local disk and a lease
object in a bucket.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
from datetime import UTC, datetime

from jobs.lake import s3
from jobs.lake.layout import StorageError, is_s3, join, local_path, split_bucket
from jobs.settings import settings


class AlreadyRunning(RuntimeError):
    """Another run holds the pipeline's checkpoint."""


def _holder(verb: str) -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}, {verb} {datetime.now(UTC).isoformat(timespec='seconds')}\n"


def _refusal(pipeline: str, checkpoint: str, holder: str) -> str:
    return (
        f"pipeline '{pipeline}' is already running on checkpoint {checkpoint} ({holder}); "
        "wait for it to finish, or stop it, then run again"
    )


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
    """An exclusive flock on `<ledger>/lock`. The kernel releases it when the holder exits,
    however it exits, so a crashed run never leaves a stale lock behind."""

    def __init__(self, ledger: str, pipeline: str):
        self.path = local_path(join(ledger, "lock"))
        self.pipeline = pipeline
        self._file = None

    def __enter__(self) -> CheckpointLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown holder"
            handle.close()
            raise AlreadyRunning(_refusal(self.pipeline, str(self.path.parent.parent), holder)) from None
        handle.seek(0)
        handle.truncate()
        handle.write(_holder("since"))
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
    """The checkpoint lock in a bucket, which has no flock.

    The lock is an object created with a conditional PUT (If-None-Match: *), so only one
    run can create it. The holder rewrites it every `lease_s / 3` seconds. A run that
    crashed stops doing so, and once its object is older than `lease_s` the next run may
    take it over, again with a conditional PUT (If-Match on the stale copy's ETag), so two
    runs can never both take it.
    """

    def __init__(self, ledger: str, pipeline: str, lease_s: float | None = None):
        self.uri = join(ledger, "lock")
        self.pipeline = pipeline
        self.lease_s = lease_s or settings().s3_lease_s
        self._etag: str | None = None
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def _put(self, **condition: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = split_bucket(self.uri)
        try:
            etag = s3.client().put_object(Bucket=bucket, Key=key, Body=_holder("renewed").encode(), **condition)["ETag"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in (
                "PreconditionFailed",
                "412",
                "ConditionalRequestConflict",
            ):
                return False
            raise s3.explain(error, self.uri) from None
        except BotoCoreError as error:
            raise s3.explain(error, self.uri) from None
        self._etag = etag
        return True

    def _current(self) -> dict:
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = split_bucket(self.uri)
        try:
            return s3.client().get_object(Bucket=bucket, Key=key)
        except (BotoCoreError, ClientError) as error:
            raise s3.explain(error, self.uri) from None

    def __enter__(self) -> S3Lease:
        if not self._put(IfNoneMatch="*"):
            current = self._current()
            holder = current["Body"].read().decode().strip() or "unknown holder"
            age_s = (datetime.now(UTC) - current["LastModified"]).total_seconds()
            if age_s <= self.lease_s or not self._put(IfMatch=current["ETag"]):
                checkpoint = self.uri.rsplit("/", 2)[0]
                raise AlreadyRunning(
                    f"{_refusal(self.pipeline, checkpoint, holder)}. A crashed run's lease expires "
                    f"{self.lease_s:.0f}s after it was last renewed"
                )
        self._heartbeat = threading.Thread(target=self._renew, name="s3-lease", daemon=True)
        self._heartbeat.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            with contextlib.suppress(StorageError):  # S3 unreachable for a moment: the next renewal tries again
                self._put(IfMatch=self._etag)

    def __exit__(self, *exc_info: object) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
        bucket, key = split_bucket(self.uri)
        with contextlib.suppress(BotoCoreError, ClientError):  # if S3 is unreachable, the lease simply expires
            s3.client().delete_object(Bucket=bucket, Key=key)


def checkpoint_lock(ledger: str, pipeline: str) -> CheckpointLock | S3Lease:
    """The lock that keeps two runs off one checkpoint, local or in a bucket."""
    return S3Lease(ledger, pipeline) if is_s3(ledger) else CheckpointLock(ledger, pipeline)
