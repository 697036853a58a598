"""What a run over S3 keeps on local disk, and what setting up its jars costs (part of `make bench`).

    python -m benchmarks.s3_run [--rounds N]

- one-file S3 run: `python -m jobs run clickstream --root s3a://lake/... --no-validate` over one
  new file, every location in a bucket (moto's server on 127.0.0.1), its wall time, and its
  Spark scratch folder (SPARK_LOCAL_DIRS, where an application keeps what it fetched) at its
  largest, sampled every 50 ms while it runs;
- jars on an empty cache: `python -m jobs jars` with nothing fetched before, from Maven
  Central (a HOME of its own: no Maven or Ivy cache to copy from), and what it keeps.

Figures, not assertions; medians of the rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from benchmarks.measure import REPO, measure

PY = sys.executable


def _size(folder: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):  # removed while walked
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


class Watch:
    """The largest a folder gets while something runs."""

    def __init__(self, folder: Path):
        self.folder, self.peak, self._done = folder, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            self.peak = max(self.peak, _size(self.folder))


def _line(number: int) -> str:
    return json.dumps(
        {"event_id": f"s3-{number}", "user_id": "u1", "event": "click", "eventtimestamp": "2023-07-30T10:00:00Z"}
    )


@contextlib.contextmanager
def local_s3() -> Iterator[dict[str, str]]:
    """Moto's S3 server on 127.0.0.1 for a benchmark: the settings that reach it, and the
    server stopped after."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        yield {
            "AWS_ACCESS_KEY_ID": "bench-access-key",
            "AWS_SECRET_ACCESS_KEY": "bench-secret-key",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{server._server.server_port}",
        }
    finally:
        server.stop()


def one_file_runs(rounds: int) -> tuple[list[float], list[int]]:
    """Each round: one new file landed in the bucket, then a run; its seconds and peak scratch."""
    from jobs.lake import s3
    from jobs.lake.landing import land_lines
    from jobs.lake.layout import Locations

    seconds, peaks = [], []
    with local_s3() as settings, s3.environment(settings), tempfile.TemporaryDirectory(prefix="s3-run-") as scratch:
        s3.client().create_bucket(Bucket="lake")
        root = "s3a://lake/bench"
        landing = Locations.resolve("clickstream", root=root).landing
        for number in range(rounds + 1):  # the first run starts the checkpoint: not counted
            land_lines({f"file-{number}.json": [_line(number * 10 + i) for i in range(10)]}, landing)
            local = Path(scratch, f"run-{number}")
            local.mkdir()
            env = {**settings, "SPARK_LOCAL_DIRS": str(local)}
            with Watch(local) as watch:
                run = measure([PY, "-m", "jobs", "run", "clickstream", f"--root={root}", "--no-validate"], env=env)
            if run.returncode != 0:
                raise SystemExit(f"the S3 run failed (exit {run.returncode}): {run.stderr[-800:]}")
            if number:
                seconds.append(run.seconds)
                peaks.append(watch.peak)
    return seconds, peaks


def jars_on_an_empty_cache() -> tuple[float, int]:
    """`python -m jobs jars` from nothing: its seconds and the size of what it keeps."""
    with tempfile.TemporaryDirectory(prefix="jars-") as empty:
        env = {"HOME": empty, "JOBS_CACHE_DIR": str(Path(empty, "cache"))}
        fetched = measure([PY, "-m", "jobs", "jars"], env=env)
        if fetched.returncode != 0:
            raise SystemExit(f"python -m jobs jars failed: {fetched.stderr[-800:]}")
        return fetched.seconds, _size(Path(empty, "cache", "jars"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.chdir(REPO)
    seconds, peaks = one_file_runs(args.rounds)
    print(
        f"S3: one-file run            {statistics.median(seconds):6.1f} s  ({', '.join(f'{s:.1f}' for s in seconds)})"
    )
    print(
        f"S3: scratch per run, peak   {statistics.median(peaks) / 2**20:6.1f} MB ({', '.join(f'{p / 2**20:.1f}' for p in peaks)})"
    )
    took, kept = jars_on_an_empty_cache()
    print(f"jars on an empty cache      {took:6.1f} s, {kept / 2**20:.0f} MB kept")


if __name__ == "__main__":
    main()
