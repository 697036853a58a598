"""The same pipeline run on `local[2]` and on the standalone cluster, side by side.

    python -m benchmarks.cluster [--events 200000] [--files 20] [--rounds 2]    (make bench-cluster)

Uses the local S3 server (make s3-up) and the cluster (make cluster), starting each that is
not running and stopping what it started. Each round lands the same generated clickstream
files (benchmarks/clickstream_data.py) under two fresh prefixes of the bucket, then runs
`python -m jobs run clickstream --no-validate` once per master, interleaved. Peak memory
is the driver's process tree; the cluster's executors are the workers' children, not in it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.clickstream_data import generate
from benchmarks.measure import REPO, gib, measure
from infra.s3 import local_server
from infra.spark.cluster import Cluster


def _ensure(started: list[str], name: str, running: bool, start: list[str]) -> None:
    if not running:
        subprocess.run(start, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        started.append(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    os.environ.update(local_server.settings())
    cluster = Cluster()
    started: list[str] = []
    _ensure(
        started, "s3", local_server.running_pid() is not None, [sys.executable, "-m", "infra.s3.local_server", "start"]
    )
    _ensure(started, "cluster", cluster.running(), [sys.executable, "-m", "infra.spark.cluster", "start"])
    from jobs.lake import fs, s3

    s3.reset()
    masters = {"local[2]": "local[2]", "cluster (2 workers x 1 core)": cluster.master_url}
    seconds: dict[str, list[float]] = {name: [] for name in masters}
    peaks: dict[str, list[int]] = {name: [] for name in masters}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            data = generate(Path(scratch) / "landing", events=args.events, files=args.files)
            (data / "_COMPLETE").unlink()  # the generator's marker is not an event file
            for number in range(1, args.rounds + 1):
                for name, master in masters.items():
                    root = f"s3a://lake/bench-cluster-{time.time_ns()}"
                    fs.copy_tree(data, f"{root}/landing/clickstream")
                    command = [sys.executable, "-m", "jobs", "run", "clickstream", "--root", root, "--no-validate"]
                    result = measure(command, env={"SPARK_MASTER": master})
                    if result.returncode != 0:
                        sys.exit(f"{name} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
                    seconds[name].append(result.seconds)
                    peaks[name].append(result.peak_memory)
                    print(f"round {number}: {name}: {result.seconds:.1f} s", flush=True)
    finally:
        for name in reversed(started):
            module = "infra.spark.cluster" if name == "cluster" else "infra.s3.local_server"
            subprocess.run([sys.executable, "-m", module, "stop"], cwd=REPO, check=False, stdout=subprocess.DEVNULL)

    print(f"\n{args.events:,} events in {args.files} files, on the local S3 server, median of {args.rounds}:")
    print(f"{'master':<30} {'wall':>9} {'driver peak':>12} {'rows/s':>9}")
    for name in masters:
        wall = statistics.median(seconds[name])
        print(f"{name:<30} {wall:>7.1f} s {gib(max(peaks[name])):>12} {args.events / wall:>9,.0f}")
    ratio = statistics.median(seconds[list(masters)[1]]) / statistics.median(seconds["local[2]"])
    print(f"cluster / local[2]: {ratio:.2f}")


if __name__ == "__main__":
    main()
