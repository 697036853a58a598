"""Background servers the Makefile starts and stops (local S3, Airflow): a pid file and a
process group each."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path


def running_pid(pid_file: Path) -> int | None:
    """The pid in `pid_file` if that process is alive."""
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, 0)
        return pid
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None


def port_answers(port: int) -> bool:
    """Whether something listens on 127.0.0.1:`port`."""
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs. A zombie does not count: it has ended and
    waits for a parent to reap it, which, where PID 1 reaps nothing, may be never."""
    if not Path("/proc").is_dir():
        return _has_members(pgid)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _parent, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # it ended while we looked
        if int(group) == pgid and state != "Z":
            return True
    return False


def stop_group(pgid: int, steps: tuple[tuple[signal.Signals, float], ...]) -> None:
    """Signal the whole process group, one (signal, seconds to wait) step at a time, until
    no process of it runs; then give its ended processes a moment to be reaped."""
    for sig, wait_s in steps:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not group_alive(pgid):
            break
    deadline = time.monotonic() + 2
    while _has_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)


def _has_members(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
