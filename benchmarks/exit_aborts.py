"""How often a fresh Python that reads a Delta table without Spark aborts as it exits
("terminate called without an active exception", SIGABRT), for each way of reading it.

    .venv/bin/python -m benchmarks.exit_aborts [--processes 40] [--commits 60]

A table of `--commits` commits of 10 partitions each (a file per partition per commit) is
written by delta-rs into a temporary folder. Each way reads it whole into Arrow in
`--processes` fresh interpreters, one at a time, the ways taking turns so that they share
the machine's load, and exits at once. delta-rs's default read hands Arrow a filesystem
written in Python, and Arrow's threads close its files after the read has returned; the
ways that give Arrow its own filesystem leave no Python object in its threads
(docs/delta.md, "Reading a table without Spark"). Figures, not assertions: a count of
aborts, which depends on the machine and its load.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from datetime import UTC, date, datetime, timedelta

from benchmarks.measure import REPO

OPEN = "from deltalake import DeltaTable\ntable = DeltaTable(PATH)\n"
ARROW_FILES = "import pyarrow.fs\nfiles = pyarrow.fs.SubTreeFileSystem(PATH, pyarrow.fs.LocalFileSystem())\n"
WAYS = {
    "delta-rs, its own filesystem (the default)": OPEN + "rows = table.to_pyarrow_table()\n",
    "the same, the table and rows let go and collected": OPEN
    + "rows = table.to_pyarrow_table()\ndel table, rows\nimport gc\ngc.collect()\n",
    "delta-rs, Arrow's filesystem (docs/delta.md)": OPEN
    + ARROW_FILES
    + "rows = table.to_pyarrow_dataset(filesystem=files).to_table()\n",
    "jobs.lake.delta.read_table": "from jobs.lake.delta import read_table\nrows = read_table(PATH)\n",
    "DuckDB over delta-rs's own filesystem": "import duckdb\n"
    + OPEN
    + "dataset = table.to_pyarrow_dataset()\nrows = duckdb.sql('SELECT * FROM dataset').fetchall()\n",
    "DuckDB over Arrow's filesystem (docs/delta.md)": "import duckdb\n"
    + OPEN
    + ARROW_FILES
    + "dataset = table.to_pyarrow_dataset(filesystem=files)\nrows = duckdb.sql('SELECT * FROM dataset').fetchall()\n",
}


def write_table(path: str, commits: int) -> None:
    import pyarrow
    from deltalake import write_deltalake

    for commit in range(commits):
        start = datetime(2023, 7, 1, tzinfo=UTC) + timedelta(minutes=5 * commit)
        days = [date(2023, 7, 1 + i) for i in range(10)]
        rows = pyarrow.table(
            {
                "window_start": pyarrow.array([start] * 100, pyarrow.timestamp("us", tz="UTC")),
                "rack": [f"rack{i % 7}" for i in range(100)],
                "avg_temperature": [20.0 + i / 10 for i in range(100)],
                "window_date": [days[i % 10] for i in range(100)],
            }
        )
        write_deltalake(path, rows, mode="append", partition_by=["window_date"])


def aborted(code: str, path: str) -> bool:
    """Whether one fresh interpreter running `code` aborted as it exited (any other failure raises)."""
    done = subprocess.run(
        [sys.executable, "-c", f"PATH = {path!r}\n{code}"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    if done.returncode == -6 or "terminate called" in done.stderr:
        return True
    if done.returncode != 0:
        raise RuntimeError(f"the read failed (exit code {done.returncode}): {done.stderr[-2000:]}")
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=40, help="fresh interpreters per way (default 40)")
    parser.add_argument("--commits", type=int, default=60, help="commits of 10 files each (default 60)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="exit-aborts-") as folder:
        path = f"{folder}/rack_temperatures"
        write_table(path, args.commits)
        aborts = dict.fromkeys(WAYS, 0)
        for _ in range(args.processes):
            for way, code in WAYS.items():
                aborts[way] += aborted(code, path)
    print(f"a table of {args.commits * 10} files; aborts at exit in {args.processes} fresh interpreters each:")
    for way, count in aborts.items():
        print(f"  {count:3d}  {way}")


if __name__ == "__main__":
    main()
