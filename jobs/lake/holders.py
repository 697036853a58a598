"""The lock that keeps a pipeline's table to one writer, as an interface (`WriterLock`; a
flock in jobs/lake/locks.py, a lease in a bucket in lease.py), and who holds it, as both kinds
record it (`Holder`): what it is doing, its process and, once Spark has started, the JVM that
runs its query; whether that holder is gone; and how a writer waits for it."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Self

log = logging.getLogger("jobs.lake.locks")


class AlreadyRunning(RuntimeError):
    """Another run holds the pipeline's checkpoint."""


RUN = "run"  # what a run's lock says it is doing; other writers name their own work
WAIT_LOG_EVERY_S = 30.0  # a waiting writer says so at first, then this often


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Jvm:
    """The JVM that runs a holder's query: under spark-submit it can go on committing for a
    while after its Python driver was killed."""

    pid: int
    started: str | None

    @classmethod
    def of(cls, pid: int) -> Jvm:
        return cls(pid, proc_start(pid))


@dataclass(frozen=True)
class Holder:
    """A lock's record, as the flock's file and the lease's object both hold it (JSON)."""

    doing: str = RUN
    pid: int | None = None
    host: str = "?"
    pid_space: str = ""  # this kernel boot and pid namespace: pids mean one process within it
    started: str | None = None  # the process's start (clock ticks since boot): a reused pid is another
    since: str = "?"
    token: str | None = None  # a lease's: which take of it this is
    spark: Jvm | None = None
    released: str | None = None  # when its holder let go (written while still holding: no JVM claimed)

    @classmethod
    def this_process(cls, doing: str, token: str | None = None) -> Holder:
        pid = os.getpid()
        return cls(doing, pid, socket.gethostname(), pid_space(), proc_start(pid), _now(), token)

    @classmethod
    def read(cls, text: str) -> Holder | None:
        """The record in `text`; None when there is none (empty: a holder between taking the
        lock and saying who it is) or it cannot be read (an older release's plain text)."""
        try:
            raw = json.loads(text)
        except ValueError:
            return None
        if not isinstance(raw, dict) or not raw:
            return None
        known = {key: raw[key] for key in cls.__dataclass_fields__ if key in raw}
        spark = known.get("spark")
        known["spark"] = Jvm(spark.get("pid"), spark.get("started")) if isinstance(spark, dict) else None
        return cls(**known)

    def text(self) -> str:
        return json.dumps({key: value for key, value in asdict(self).items() if value is not None})

    def running(self, jvm_pid: int) -> Holder:
        return replace(self, spark=Jvm.of(jvm_pid))

    def letting_go(self) -> Holder:
        """The record its holder leaves as it lets go: released, its JVM no longer claimed (a
        process that runs on, as a group's application does, writes nothing more here)."""
        return replace(self, spark=None, released=_now())

    def gone(self) -> bool:
        """Whether this was a process in this pid space that no longer runs, nor its JVM."""
        if not self.pid_space or self.pid_space != pid_space() or self.pid is None:
            return False
        return proc_start(self.pid) != self.started and not self.jvm_alive()

    def jvm_alive(self) -> bool:
        """Whether the JVM this holder recorded, in this pid space, still runs."""
        if self.spark is None or self.pid_space != pid_space():
            return False
        return proc_start(self.spark.pid) == self.spark.started is not None

    def holds(self) -> bool:
        """Whether this record still keeps the lock taken, whoever holds the flock or lease:
        not when its holder let go, nor when it is gone (a JVM it left running keeps it)."""
        return self.jvm_alive() or not (self.released or self.gone())

    def describe(self) -> str:
        if not self.pid:
            return "unknown holder"
        doing = "" if self.doing == RUN else f"{self.doing} by "
        return f"{doing}pid {self.pid} on {self.host}, since {self.since}"


class WriterLock(ABC):
    """The lock that keeps a pipeline's table to one writer, whatever holds it: taken on enter
    (waiting for, or refused by, the holder), held until exit, where it is let go.

    `waited_s`: how long the take waited. A flock and a lease differ in how they are taken,
    renewed and let go; what they record of their holder is one `Holder`."""

    waited_s: float = 0.0

    def __init__(self, ledger: str, pipeline_name: str, doing: str = RUN, wait_s: float = 0.0):
        self.ledger, self.pipeline, self.doing, self.wait_s = ledger, pipeline_name, doing, wait_s
        self.checkpoint = ledger.rstrip("/").rpartition("/")[0]  # what a refusal names

    @abstractmethod
    def __enter__(self) -> Self: ...

    @abstractmethod
    def __exit__(self, *exc_info: object) -> None: ...

    @abstractmethod
    def record_spark(self, jvm_pid: int) -> None:
        """The JVM that runs this holder's query: the lock stays taken while it lives."""

    @abstractmethod
    def holder(self) -> Holder | None:
        """Who holds the lock now, without taking it (None: free)."""

    @abstractmethod
    def describe(self) -> str: ...

    def renew(self) -> bool:
        """Say again that this holder holds the lock: False once another took it over. A lease
        renews itself (every lease_s / 4); a flock needs none."""
        return True

    def ensure_held(self) -> None:
        """Raise LeaseLost if this holder can no longer be sure it holds the lock (a flock is
        never lost while its holder lives)."""
        return None


def refusal(pipeline_name: str, checkpoint: str, holder: Holder | None) -> str:
    said = holder.describe() if holder else "unknown holder"
    return (
        f"pipeline '{pipeline_name}' is already running on checkpoint {checkpoint} ({said}); "
        "wait for it to finish, or stop it, then run again"
    )


# How long a lock held by a holder that has not said who it is (no record, or the record of
# the holder before it) is tried again before it counts as a run: saying so takes milliseconds.
SETTLING_S = 2.0


class Waiting:
    """A writer's wait for the lock's holder: refused at once when a run meets a run,
    otherwise up to `wait_s`, saying whom it waits for (and how long it waited, after)."""

    def __init__(self, doing: str, wait_s: float, pipeline_name: str, checkpoint: str):
        self.doing, self.pipeline, self.checkpoint = doing, pipeline_name, checkpoint
        self.started = time.monotonic()
        self.deadline = self.started + wait_s
        self.said_at: float | None = None

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def or_refuse(self, holder: Holder | None, why: str = "") -> None:
        """Sleep a moment before the next try, or raise AlreadyRunning. `holder`: the record
        of the lock taken now."""
        if (holder is None or holder.released) and self.seconds() < SETTLING_S:
            # A holder between taking the lock and saying who it is, or one that said it let
            # go and is letting go: not yet a run to refuse.
            time.sleep(0.05)
            return
        holder_doing = holder.doing if holder else RUN
        if (self.doing == RUN and holder_doing == RUN) or time.monotonic() >= self.deadline:
            refused = refusal(self.pipeline, self.checkpoint, holder)
            waited = f" (waited {self.seconds():.0f}s)" if self.seconds() >= 1 else ""
            raise AlreadyRunning(f"{refused}{why}{waited}")
        now = time.monotonic()
        if self.said_at is None or now - self.said_at >= WAIT_LOG_EVERY_S:
            self.said_at = now
            log.warning(
                "  lock: %s waits for %s on %s's table (%s), up to %.0fs more",
                self.doing,
                holder_doing,
                self.pipeline,
                holder.describe() if holder else "unknown holder",
                self.deadline - now,
            )
        time.sleep(0.5)


def proc_start(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot), or None if there is none (or
    only its exit status is left: a zombie no parent has reaped yet)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[19] if len(fields) > 19 and fields[0] not in ("Z", "X") else None


def pid_space() -> str:
    """This kernel boot and pid namespace: pids mean the same process only within it."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return ""  # not Linux: a holder's pid cannot be checked, its lease expires instead


def wait_for_its_jvm(holder: Holder | None, wait_s: float, pipeline_name: str, checkpoint: str) -> None:
    """A holder whose process died (its flock released) may have left its JVM running,
    still able to commit a batch: wait for it to go, up to `wait_s`, else refuse."""
    deadline = time.monotonic() + wait_s
    while holder is not None and holder.jvm_alive():
        if time.monotonic() > deadline:
            jvm = holder.spark.pid
            raise AlreadyRunning(
                f"{refusal(pipeline_name, checkpoint, holder)}: its process is gone, but the JVM "
                f"that ran its query (pid {jvm}) still runs after {wait_s:.0f}s; stop it (kill {jvm}), then run again"
            )
        time.sleep(0.2)
