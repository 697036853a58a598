"""One writer of a pipeline's table at a time, and one writer per shared folder.

Spark does not stop two processes from running the same checkpoint, and Delta's default
log store on S3 assumes one driver commits at a time (two can both write version N). So
everything that writes a pipeline's table takes the pipeline's lock first
(`checkpoint_lock`): runs, a backfill's replacement and its rollback, a rebuild's switch and
its rollback, OPTIMIZE and VACUUM. On a local disk it is a flock, in a bucket a lease object.

The lock names what its holder is doing, its process and, once Spark has started, the JVM
that runs its query (`record_spark`): under spark-submit the JVM is the Python driver's
parent and can go on committing batches for a while after the driver was killed, so the
lock is free only when both are gone. A holder that lets go says so in its record first
(released, no JVM claimed), so the next one never waits for a JVM that runs on for other work.
Both kinds are a `WriterLock` (jobs/lake/holders.py): take, hold, renew, who holds, let go.

Who waits: a run meeting another run is refused at once (one run of a pipeline at a time);
every other meeting waits for the holder, up to `wait_s`, saying so (a replacement or a
compaction waits for the run in progress, a run for the compaction), so the two serialize.
"""

from __future__ import annotations

import fcntl
from typing import IO

from jobs.lake.holders import RUN, AlreadyRunning, Holder, Waiting, WriterLock, wait_for_its_jvm
from jobs.lake.layout import is_s3, join, local_path
from jobs.lake.lease import LeaseLost, S3Lease

__all__ = [
    "RUN",
    "AlreadyRunning",
    "CheckpointLock",
    "FolderLock",
    "Holder",
    "LeaseLost",
    "S3Lease",
    "WriterLock",
    "checkpoint_lock",
    "holder",
]


def _flock(path, *, wait: bool) -> IO | None:
    """`path` opened and exclusively flocked (waiting for it, or None when another holds it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # noqa: SIM115 (it is the lock: it stays open while held)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _unlock(handle: IO) -> None:
    fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()


class FolderLock:
    """Waits for, then holds, an exclusive flock on `<folder>/lock` (released on exit, however it ends)."""

    def __init__(self, folder: str):
        self.path = local_path(join(folder, "lock"))
        self._file: IO | None = None

    def __enter__(self) -> FolderLock:
        self._file = _flock(self.path, wait=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._file is not None:
            _unlock(self._file)
            self._file = None


def _record(handle: IO) -> Holder | None:
    handle.seek(0)
    return Holder.read(handle.read())


class CheckpointLock(WriterLock):
    """An exclusive flock on `<ledger>/lock`, its holder's record in the file. The kernel
    releases it when the holder exits, however it exits, so a crashed run never leaves a stale
    lock behind; a holder killed without its JVM (which the kernel knows nothing of) is waited
    for until the JVM is gone."""

    def __init__(self, ledger: str, pipeline_name: str, doing: str = RUN, wait_s: float = 0.0, jvm_wait_s: float = 60):
        super().__init__(ledger, pipeline_name, doing, wait_s)
        self.path = local_path(join(ledger, "lock"))
        self.jvm_wait_s = jvm_wait_s
        self._file: IO | None = None
        self._me = Holder.this_process(doing)

    def __enter__(self) -> CheckpointLock:
        waiting = Waiting(self.doing, self.wait_s, self.pipeline, self.checkpoint)
        while (handle := _flock(self.path, wait=False)) is None:
            with open(self.path) as held:
                waiting.or_refuse(Holder.read(held.read()))
        try:
            wait_for_its_jvm(_record(handle), self.jvm_wait_s, self.pipeline, self.checkpoint)
        except AlreadyRunning:
            handle.close()
            raise
        self._file, self.waited_s = handle, waiting.seconds()
        self._me = Holder.this_process(self.doing)  # `since`: when it took the lock, not when it began to wait
        self._write(self._me)
        return self

    def record_spark(self, jvm_pid: int) -> None:
        self._me = self._me.running(jvm_pid)
        self._write(self._me)

    def _write(self, record: Holder) -> None:
        self._file.seek(0)
        self._file.truncate()
        self._file.write(record.text() + "\n")
        self._file.flush()

    def holder(self) -> Holder | None:
        try:
            found = Holder.read(self.path.read_text())
        except FileNotFoundError:
            return None
        return found if found is not None and found.holds() else None

    def describe(self) -> str:
        return f"flock on {self.path}"

    def __exit__(self, *exc_info: object) -> None:
        if self._file is not None:
            # Released, its JVM no longer claimed, while still held: the next holder reads a
            # record that says so, never an empty one nor one that claims a live JVM.
            self._write(self._me.letting_go())
            _unlock(self._file)
            self._file = None


def holder(ledger: str) -> Holder | None:
    """Who holds the pipeline's lock now, without taking it (None: free): a holder whose
    process and JVM are gone holds nothing."""
    return checkpoint_lock(ledger, "").holder()


def checkpoint_lock(ledger: str, pipeline_name: str, doing: str = RUN, wait_s: float = 0.0) -> WriterLock:
    """The lock that keeps a pipeline's table to one writer, local or in a bucket. A run
    meeting a run is refused; any other meeting waits for the holder up to `wait_s`."""
    kind = S3Lease if is_s3(ledger) else CheckpointLock
    return kind(ledger, pipeline_name, doing=doing, wait_s=wait_s)
