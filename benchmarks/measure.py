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
    peak_rss: int  # bytes, the whole process tree at its largest
    returncode: int
    stdout: str
    stderr: str


def _tree_rss(process: psutil.Process) -> int:
    total = 0
    for member in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # it ended between listing and reading
            total += member.memory_info().rss
    return total


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
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        tree = psutil.Process(child.pid)
        while not done.is_set():
            try:
                peak = max(peak, _tree_rss(tree))
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
    return Measured(time.monotonic() - started, peak, child.returncode, out, err)


def gib(size: int) -> str:
    return f"{size / 2**30:.2f} GiB"
