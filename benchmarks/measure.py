"""Timing a whole command: wall time and the peak memory of its process tree (proportional set size)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Measured:
    seconds: float
    peak_memory: int  # bytes, the whole process tree's proportional set size at its largest (_tree_memory)
    peak_rss: int  # bytes, its processes' resident sizes summed at their largest (shared pages counted in each)
    returncode: int
    stdout: str
    stderr: str


def _tree_memory(process: psutil.Process) -> tuple[int, int]:
    """The proportional set size (PSS) of a process tree, and the plain sum of its processes'
    RSS. PSS divides each shared page among the processes that map it: a child between its
    fork and its exec (the JVM starts every command it runs that way) and the Python workers
    forked from their daemon count once, not once each. Read from /proc/PID/smaps_rollup,
    which the kernel sums itself; where there is none, a process counts its RSS."""
    members = [process, *process.children(recursive=True)]
    proportional = resident = 0
    for member in members:
        with contextlib.suppress(psutil.Error):  # it ended between listing and reading
            rss = member.memory_info().rss
            resident += rss
            proportional += _pss(member.pid, rss)
    return proportional, resident


def _pss(pid: int, rss: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # ended, or no smaps_rollup (not Linux 4.14+)
        pass
    return rss


def measure(command: list[str], env: dict[str, str] | None = None, timeout_s: float = 3600) -> Measured:
    """Run `command` from the repository, sampling its process tree's memory every 0.2 s."""
    started = time.monotonic()
    child = subprocess.Popen(
        command,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    peak = peak_rss = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, peak_rss
        tree = psutil.Process(child.pid)
        while not done.is_set():
            try:
                memory, rss = _tree_memory(tree)
                peak, peak_rss = max(peak, memory), max(peak_rss, rss)
            except psutil.Error:
                return
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = child.communicate(timeout=timeout_s)
    finally:
        done.set()
        if child.poll() is None:
            os.killpg(child.pid, 9)
            child.wait()
    sampler.join()
    return Measured(time.monotonic() - started, peak, peak_rss, child.returncode, out, err)


def gib(size: int) -> str:
    return f"{size / 2**30:.2f} GiB"
