"""One run per checkpoint at a time, and one writer per shared folder.

Spark does not stop two processes from running the same checkpoint: the runner takes
the checkpoint's lock first (`checkpoint_lock`), a flock on a local disk and a lease
object in a bucket. The lock names the run's process and, once Spark has started, the JVM
that runs its query (`record_spark`): under spark-submit the JVM is the Python driver's
parent and can go on committing batches for a while after the driver was killed, so the
lock is free only when both are gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
import uuid
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

from jobs.lake import s3
from jobs.lake.layout import StorageError, is_s3, join, local_path, split_bucket
from jobs.settings import settings


class AlreadyRunning(RuntimeError):
    """Another run holds the pipeline's checkpoint."""


def _this_process() -> dict:
    """Who holds a lock, as the local lock and the S3 lease both record it (`_describe` reads it)."""
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "pid_space": _pid_space(),
        "started": _proc_start(os.getpid()),
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _jvm(pid: int) -> dict:
    """The JVM that runs a run's query, as a holder records it."""
    return {"pid": pid, "started": _proc_start(pid)}


def _read_holder(text: str) -> dict:
    try:
        holder = json.loads(text)
    except ValueError:
        holder = None  # an older release's plain-text holder
    return holder if isinstance(holder, dict) else {}


def _refusal(pipeline_name: str, checkpoint: str, holder: str) -> str:
    return (
        f"pipeline '{pipeline_name}' is already running on checkpoint {checkpoint} ({holder}); "
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
    however it exits, so a crashed run never leaves a stale lock behind; a holder killed
    without its JVM (which the kernel knows nothing of) is waited for until the JVM is gone."""

    def __init__(self, ledger: str, pipeline_name: str, jvm_wait_s: float = 60):
        self.path = local_path(join(ledger, "lock"))
        self.pipeline = pipeline_name
        self.jvm_wait_s = jvm_wait_s
        self._file = None
        self._me: dict = {}

    def __enter__(self) -> CheckpointLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _describe(_read_holder(handle.read()))
            handle.close()
            raise AlreadyRunning(_refusal(self.pipeline, str(self.path.parent.parent), holder)) from None
        handle.seek(0)
        previous = _read_holder(handle.read())
        try:
            _wait_for_its_jvm(previous, self.jvm_wait_s, self.pipeline, str(self.path.parent.parent))
        except AlreadyRunning:
            handle.close()
            raise
        self._file, self._me = handle, _this_process()
        self._write()
        return self

    def record_spark(self, jvm_pid: int) -> None:
        """The JVM that runs this run's query: the lock stays taken while it lives."""
        self._me["spark"] = _jvm(jvm_pid)
        self._write()

    def _write(self) -> None:
        self._file.seek(0)
        self._file.truncate()
        self._file.write(json.dumps(self._me) + "\n")
        self._file.flush()

    def describe(self) -> str:
        return f"flock on {self.path}"

    def check(self) -> None:
        """A flock is never lost while its holder lives."""

    def __exit__(self, *exc_info: object) -> None:
        if self._file is not None:
            self._file.truncate(0)
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


class LeaseLost(RuntimeError):
    """This run can no longer be sure it holds the checkpoint's lease: it must stop writing."""


def _proc_start(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot), or None if there is none (or
    only its exit status is left: a zombie no parent has reaped yet)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[19] if len(fields) > 19 and fields[0] not in ("Z", "X") else None


def _pid_space() -> str:
    """This kernel boot and pid namespace: pids mean the same process only within it."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return ""  # not Linux: a holder's pid cannot be checked, its lease expires instead


def _gone(holder: dict) -> bool:
    """Whether the holder was a process in this pid space that no longer runs, nor its JVM."""
    if not holder.get("pid_space") or holder["pid_space"] != _pid_space():
        return False
    return _proc_start(holder["pid"]) != holder.get("started") and not _jvm_alive(holder)


def _jvm_alive(holder: dict) -> bool:
    """Whether the JVM a holder recorded, in this pid space, still runs."""
    jvm = holder.get("spark")
    if not jvm or holder.get("pid_space") != _pid_space():
        return False
    return _proc_start(jvm["pid"]) == jvm.get("started") is not None


def _wait_for_its_jvm(holder: dict, wait_s: float, pipeline_name: str, checkpoint: str) -> None:
    """A holder whose process died (its flock released) may have left its JVM running,
    still able to commit a batch: wait for it to go, up to `wait_s`, else refuse."""
    deadline = time.monotonic() + wait_s
    while _jvm_alive(holder):
        if time.monotonic() > deadline:
            jvm = holder["spark"]["pid"]
            raise AlreadyRunning(
                f"{_refusal(pipeline_name, checkpoint, _describe(holder))}: its process is gone, but the JVM "
                f"that ran its query (pid {jvm}) still runs after {wait_s:.0f}s; stop it (kill {jvm}), then run again"
            )
        time.sleep(0.2)


class S3Lease:
    """The checkpoint lock in a bucket, which has no flock.

    The lock is an object created with a conditional PUT (If-None-Match: *), so only one
    run can create it. The holder rewrites it every `lease_s / 4` seconds. The next run may
    take it over, again with a conditional PUT (If-Match on the copy it read), so two runs
    can never both take it:
    - at once when the holder was a process on this machine that no longer runs;
    - otherwise once the object is older than `lease_s`.

    The fence: a holder that could not renew for `2/3 lease_s` counts the lease as lost
    (`check` raises LeaseLost) and stops before anyone may take it over; so does one
    whose renewal finds another run's copy.
    """

    def __init__(self, ledger: str, pipeline_name: str, lease_s: float | None = None):
        self.uri = join(ledger, "lock")
        self.pipeline = pipeline_name
        self.lease_s = lease_s or settings().s3_lease_s
        self._me = _this_process() | {"token": uuid.uuid4().hex}
        self._etag: str | None = None
        self._renewed_at = 0.0  # time.monotonic() of the last renewal S3 confirmed
        self._last_error = ""
        self._lost = ""
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def describe(self) -> str:
        return f"lease {self.uri}, renewed every {self.lease_s / 4:g} s"

    def record_spark(self, jvm_pid: int) -> None:
        """The JVM that runs this run's query, written with the next renewal."""
        self._me["spark"] = _jvm(jvm_pid)

    def _put(self, **condition: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = split_bucket(self.uri)
        body = json.dumps(self._me).encode()
        asked_at = time.monotonic()
        try:
            etag = s3.client().put_object(Bucket=bucket, Key=key, Body=body, **condition)["ETag"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in _CONFLICT:
                return False
            raise s3.explain(error, self.uri) from None
        except BotoCoreError as error:
            raise s3.explain(error, self.uri) from None
        self._etag, self._renewed_at = etag, asked_at
        return True

    def _current(self) -> tuple[dict, str, float]:
        """The lock object: its holder, ETag and age in seconds."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = split_bucket(self.uri)
        try:
            current = s3.client().get_object(Bucket=bucket, Key=key)
        except (BotoCoreError, ClientError) as error:
            raise s3.explain(error, self.uri) from None
        holder = _read_holder(current["Body"].read().decode(errors="replace"))  # {}: no pid to check, it expires
        # Its age by the store's clock (the answer's Date), never this machine's: a clock set
        # ahead here would take a live lease over.
        now = _served_at(current.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date"))
        return holder, current["ETag"], (now - current["LastModified"]).total_seconds()

    def __enter__(self) -> S3Lease:
        if not self._put(IfNoneMatch="*"):
            holder, etag, age_s = self._current()
            free = (_gone(holder) or age_s > self.lease_s) and not _jvm_alive(holder)
            if not free or not self._put(IfMatch=etag):
                checkpoint = self.uri.rsplit("/", 2)[0]
                raise AlreadyRunning(
                    f"{_refusal(self.pipeline, checkpoint, _describe(holder))}. The lease of a run that "
                    f"ended without releasing it is free at once on its own machine, elsewhere "
                    f"{self.lease_s:.0f}s after its last renewal ({age_s:.0f}s ago)"
                )
        self._heartbeat = threading.Thread(target=self._renew, name="s3-lease", daemon=True)
        self._heartbeat.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            try:
                if self._put(IfMatch=self._etag) or self._adopt():
                    continue
                holder = self._current()[0]
                self._lost = f"another run took the checkpoint's lease over ({_describe(holder)})"
                return
            except StorageError as error:  # S3 unreachable for a moment: the next renewal tries again
                self._last_error = str(error)

    def _adopt(self) -> bool:
        """After a renewal whose answer was lost: whether the object is still this run's."""
        holder, etag, _ = self._current()
        if holder.get("token") != self._me["token"]:
            return False
        self._etag = etag
        return True

    def check(self) -> None:
        """Raise LeaseLost if this run can no longer be sure it holds the lease."""
        silent_s = time.monotonic() - self._renewed_at
        if not self._lost and silent_s > self.lease_s * 2 / 3:
            why = self._last_error or f"the S3 endpoint {s3.describe_endpoint()} stopped answering"
            self._lost = (
                f"{why}: the lease was not renewed for {silent_s:.0f}s, so the run stopped before "
                f"another run may take it over ({self.lease_s:.0f}s)"
            )
        if self._lost:
            raise LeaseLost(self._lost)

    def __exit__(self, *exc_info: object) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        self._stop.set()
        if self._lost:
            return  # not this run's to release
        bucket, key = split_bucket(self.uri)
        with contextlib.suppress(BotoCoreError, ClientError, StorageError):
            # Released only while it is still this run's; if S3 is unreachable, the next
            # run on this machine takes it over at once, elsewhere when it expires.
            if self._current()[0].get("token") == self._me["token"]:
                s3.client().delete_object(Bucket=bucket, Key=key)


_CONFLICT = ("PreconditionFailed", "412", "ConditionalRequestConflict")


def _served_at(date: str | None) -> datetime:
    """When the store answered, by its clock (an HTTP Date, in UTC); this machine's clock only
    when the answer has no Date it can read."""
    try:
        served = parsedate_to_datetime(date) if date else None
    except (TypeError, ValueError):
        served = None
    if served is None:
        return datetime.now(UTC)
    return served if served.tzinfo else served.replace(tzinfo=UTC)  # '-0000' reads as naive


def _describe(holder: dict) -> str:
    if not holder.get("pid"):
        return "unknown holder"
    return f"pid {holder['pid']} on {holder.get('host', '?')}, since {holder.get('since', '?')}"


def checkpoint_lock(ledger: str, pipeline_name: str) -> CheckpointLock | S3Lease:
    """The lock that keeps two runs off one checkpoint, local or in a bucket."""
    return S3Lease(ledger, pipeline_name) if is_s3(ledger) else CheckpointLock(ledger, pipeline_name)
