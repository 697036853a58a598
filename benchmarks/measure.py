"""Timing a whole command: wall time and the peak resident memory of its process tree."""

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
    peak_memory: int  # bytes, the whole process tree at its largest (_tree_memory)
    peak_rss: int  # bytes, its processes' resident sizes summed at their largest (shared pages counted in each)
    returncode: int
    stdout: str
    stderr: str


def _tree_memory(process: psutil.Process) -> tuple[int, int]:
    """The resident memory of a process tree, and the plain sum of its processes' RSS. A
    child still a copy of its parent, between its fork and its exec (the JVM starts every
    command it runs that way, several in a run), shares its parent's memory: it counts
    nothing in the first, where the plain sum counted the JVM twice whenever a sample fell
    in that instant. (Pages the Python workers share with their daemon still count in
    each: a proportional count read from each process's full smaps cost the runs it
    measured 46 -> 58 s; /proc/PID/smaps_rollup, much cheaper, is not tried here yet.)"""
    members = [process, *process.children(recursive=True)]
    resident: dict[int, int] = {}
    for member in members:
        with contextlib.suppress(psutil.Error):  # it ended between listing and reading
            resident[member.pid] = member.memory_info().rss
    total = 0
    for member in members:
        with contextlib.suppress(psutil.Error):
            if member.pid in resident and not _unexeced_copy(member, resident):
                total += resident[member.pid]
    return total, sum(resident.values())


def _unexeced_copy(member: psutil.Process, resident: dict[int, int]) -> bool:
    """The same program and command line as its parent, and about its resident size (read a
    moment apart): the parent's memory seen a second time (a Python worker forked from its
    daemon soon differs from it by far more)."""
    parent = member.parent()
    return (
        parent is not None
        and abs(resident.get(parent.pid, 0) - resident[member.pid]) <= resident[member.pid] // 20
        and member.exe() == parent.exe()
        and member.cmdline() == parent.cmdline()
    )


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
