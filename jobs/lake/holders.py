"""Who holds a pipeline's lock (jobs/lake/locks.py, lease.py), as both kinds record it:
what it is doing, its process and, once Spark has started, the JVM that runs its query;
whether that holder is gone; and how a writer waits for it."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger("jobs.lake.locks")


class AlreadyRunning(RuntimeError):
    """Another run holds the pipeline's checkpoint."""


RUN = "run"  # what a run's lock says it is doing; other writers name their own work
WAIT_LOG_EVERY_S = 30.0  # a waiting writer says so at first, then this often


def this_process(doing: str) -> dict:
    """Who holds a lock, as the local lock and the S3 lease both record it (`describe_holder` reads it)."""
    return {
        "doing": doing,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "pid_space": pid_space(),
        "started": proc_start(os.getpid()),
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def jvm_record(pid: int) -> dict:
    """The JVM that runs a run's query, as a holder records it."""
    return {"pid": pid, "started": proc_start(pid)}


def read_holder(text: str) -> dict:
    try:
        holder = json.loads(text)
    except ValueError:
        holder = None  # an older release's plain-text holder
    return holder if isinstance(holder, dict) else {}


def refusal(pipeline_name: str, checkpoint: str, holder: str) -> str:
    return (
        f"pipeline '{pipeline_name}' is already running on checkpoint {checkpoint} ({holder}); "
        "wait for it to finish, or stop it, then run again"
    )


# How long a lock held by a holder that has not said who it is (an empty record) is tried
# again before it counts as a run: saying so takes a holder milliseconds.
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

    def or_refuse(self, holder: dict, why: str = "") -> None:
        """Sleep a moment before the next try, or raise AlreadyRunning."""
        if not holder and self.seconds() < SETTLING_S:
            # A holder between taking the lock and saying who it is, or between wiping that
            # and letting go: not yet a run to refuse (one refused a run at once in CI).
            time.sleep(0.05)
            return
        holder_doing = holder.get("doing", RUN)
        if (self.doing == RUN and holder_doing == RUN) or time.monotonic() >= self.deadline:
            refused = refusal(self.pipeline, self.checkpoint, describe_holder(holder))
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
                describe_holder(holder),
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


def gone(holder: dict) -> bool:
    """Whether the holder was a process in this pid space that no longer runs, nor its JVM."""
    if not holder.get("pid_space") or holder["pid_space"] != pid_space():
        return False
    return proc_start(holder["pid"]) != holder.get("started") and not jvm_alive(holder)


def jvm_alive(holder: dict) -> bool:
    """Whether the JVM a holder recorded, in this pid space, still runs."""
    jvm = holder.get("spark")
    if not jvm or holder.get("pid_space") != pid_space():
        return False
    return proc_start(jvm["pid"]) == jvm.get("started") is not None


def wait_for_its_jvm(holder: dict, wait_s: float, pipeline_name: str, checkpoint: str) -> None:
    """A holder whose process died (its flock released) may have left its JVM running,
    still able to commit a batch: wait for it to go, up to `wait_s`, else refuse."""
    deadline = time.monotonic() + wait_s
    while jvm_alive(holder):
        if time.monotonic() > deadline:
            jvm = holder["spark"]["pid"]
            raise AlreadyRunning(
                f"{refusal(pipeline_name, checkpoint, describe_holder(holder))}: its process is gone, but the JVM "
                f"that ran its query (pid {jvm}) still runs after {wait_s:.0f}s; stop it (kill {jvm}), then run again"
            )
        time.sleep(0.2)


def describe_holder(holder: dict) -> str:
    if not holder.get("pid"):
        return "unknown holder"
    doing = holder.get("doing", RUN)
    doing = "" if doing == RUN else f"{doing} by "
    return f"{doing}pid {holder['pid']} on {holder.get('host', '?')}, since {holder.get('since', '?')}"
