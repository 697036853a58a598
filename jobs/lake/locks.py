"""One writer of a pipeline's table at a time, and one writer per shared folder.

Spark does not stop two processes from running the same checkpoint, and Delta's default
log store on S3 assumes one driver commits at a time (two can both write version N). So
everything that writes a pipeline's table takes the pipeline's lock first
(`checkpoint_lock`): runs, a backfill's replacement and its rollback, a rebuild's switch and
its rollback, OPTIMIZE and VACUUM. On a local disk it is a flock, in a bucket a lease object.

The lock names what its holder is doing, its process and, once Spark has started, the JVM
that runs its query (`record_spark`): under spark-submit the JVM is the Python driver's
parent and can go on committing batches for a while after the driver was killed, so the
lock is free only when both are gone.

Who waits: a run meeting another run is refused at once (one run of a pipeline at a time);
every other meeting waits for the holder, up to `wait_s`, saying so (a replacement or a
compaction waits for the run in progress, a run for the compaction), so the two serialize.
"""

from __future__ import annotations

import fcntl
import json

from jobs.lake.holders import (
    RUN,
    AlreadyRunning,
    Waiting,
    gone,
    jvm_record,
    read_holder,
    this_process,
    wait_for_its_jvm,
)
from jobs.lake.layout import is_s3, join, local_path
from jobs.lake.lease import LeaseLost, S3Lease

__all__ = ["RUN", "AlreadyRunning", "CheckpointLock", "FolderLock", "LeaseLost", "S3Lease", "checkpoint_lock", "holder"]


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

    def __init__(self, ledger: str, pipeline_name: str, doing: str = RUN, wait_s: float = 0.0, jvm_wait_s: float = 60):
        self.path = local_path(join(ledger, "lock"))
        self.pipeline = pipeline_name
        self.doing, self.wait_s, self.jvm_wait_s = doing, wait_s, jvm_wait_s
        self.waited_s = 0.0
        self._file = None
        self._me: dict = {}

    def __enter__(self) -> CheckpointLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        checkpoint = str(self.path.parent.parent)
        waiting = Waiting(self.doing, self.wait_s, self.pipeline, checkpoint)
        while True:
            handle = open(self.path, "a+")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                handle.seek(0)
                holder = read_holder(handle.read())
                handle.close()
            waiting.or_refuse(holder)
        handle.seek(0)
        previous = read_holder(handle.read())
        try:
            wait_for_its_jvm(previous, self.jvm_wait_s, self.pipeline, checkpoint)
        except AlreadyRunning:
            handle.close()
            raise
        self._file, self._me = handle, this_process(self.doing)
        self.waited_s = waiting.seconds()
        self._write()
        return self

    def record_spark(self, jvm_pid: int) -> None:
        """The JVM that runs this run's query: the lock stays taken while it lives."""
        self._me["spark"] = jvm_record(jvm_pid)
        self._write()

    def _write(self) -> None:
        self._file.seek(0)
        self._file.truncate()
        self._file.write(json.dumps(self._me) + "\n")
        self._file.flush()

    def describe(self) -> str:
        return f"flock on {self.path}"

    def ensure_held(self) -> None:
        """A flock is never lost while its holder lives."""

    def __exit__(self, *exc_info: object) -> None:
        if self._file is not None:
            self._file.truncate(0)
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


def holder(ledger: str) -> dict | None:
    """Who holds the pipeline's lock now, without taking it (None: free): a holder whose
    process and JVM are gone holds nothing."""
    if is_s3(ledger):
        return S3Lease(ledger, "").holder()
    try:
        found = read_holder(local_path(join(ledger, "lock")).read_text())
    except FileNotFoundError:
        return None
    return None if not found or gone(found) else found


def checkpoint_lock(ledger: str, pipeline_name: str, doing: str = RUN, wait_s: float = 0.0) -> CheckpointLock | S3Lease:
    """The lock that keeps a pipeline's table to one writer, local or in a bucket. A run
    meeting a run is refused; any other meeting waits for the holder up to `wait_s`."""
    kind = S3Lease if is_s3(ledger) else CheckpointLock
    return kind(ledger, pipeline_name, doing=doing, wait_s=wait_s)
