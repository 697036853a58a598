"""What a DAG run costs: the three runs an on-call engineer sees most, timed whole.

    python -m benchmarks.dag_runs [--events 900] [--files 3]    (make bench-dags)

On a fresh Airflow home (SQLite) and a fresh local root, with `airflow dags test`:
1. `jobs_clickstream` once on a first arrival (the table's start; shown, not compared);
2. `jobs_clickstream` on a small increment (`--events` new events in `--files` files);
3. `jobs_clickstream` with nothing new;
4. `jobs_data_quality` after those runs;
5. `jobs_data_quality` again, with no table changed since.
Prints each run's wall time and its tasks' durations (from the metadata DB). Figures, not
assertions: compare them between versions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.measure import REPO

AIRFLOW = str(Path(sys.executable).parent / "airflow")


def _environment(home: Path, root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "JOBS_ROOT": str(root),
    }


def _land(landing: Path, arrival: int, events: int, files: int) -> None:
    """`events` clickstream events in `files` files, minutes after the previous arrival's."""
    rng = random.Random(arrival)
    start = datetime(2023, 7, 30, 10, tzinfo=UTC) + timedelta(minutes=30 * arrival)
    landing.mkdir(parents=True, exist_ok=True)
    per_file = events // files
    for number in range(files):
        lines = []
        for i in range(per_file):
            moment = start + timedelta(seconds=rng.randrange(30 * 60))
            event = {
                "event_id": f"a{arrival}-f{number}-{i}",
                "user_id": f"user{rng.randrange(50)}",
                "event": rng.choice(["click", "view", "purchase"]),
                "eventtimestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            lines.append(json.dumps(event))
        (landing / f"arrival-{arrival}-part-{number}.json").write_text("\n".join(lines) + "\n")


def _dag_run(home: Path, root: Path, dag_id: str) -> tuple[float, str, dict[str, float]]:
    started = time.monotonic()
    result = subprocess.run(
        [AIRFLOW, "dags", "test", dag_id], env=_environment(home, root), capture_output=True, text=True, timeout=1800
    )
    seconds = time.monotonic() - started
    finished = [line for line in result.stdout.splitlines() + result.stderr.splitlines() if "DagRun Finished" in line]
    if not finished:
        sys.exit(f"error: {dag_id} did not finish:\n{(result.stdout + result.stderr)[-3000:]}")
    fields = dict(part.split("=", 1) for part in finished[-1].replace(",", " ").split() if "=" in part)
    with sqlite3.connect(home / "airflow.db") as db:
        rows = db.execute(
            "select task_id, state, julianday(end_date) - julianday(start_date) from task_instance"
            " where dag_id = ? and run_id = ?",
            (dag_id, fields["run_id"]),
        ).fetchall()
    tasks = {f"{task} ({state})": (days or 0) * 86400 for task, state, days in rows}
    return seconds, fields["state"], tasks


def _show(label: str, seconds: float, state: str, tasks: dict[str, float]) -> None:
    print(f"{label:<34} {seconds:6.1f} s  {state}")
    for task, task_seconds in sorted(tasks.items(), key=lambda item: -item[1]):
        print(f"    {task:<40} {task_seconds:6.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=900, help="events in the increment (default: %(default)s)")
    parser.add_argument("--files", type=int, default=3, help="files they land in (default: %(default)s)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-dags-") as scratch:
        home, root = Path(scratch) / "airflow", Path(scratch) / "root"
        home.mkdir()
        subprocess.run([AIRFLOW, "db", "migrate"], env=_environment(home, root), capture_output=True, check=True)
        landing = root / "landing" / "clickstream"
        runs = [
            ("jobs_clickstream, first arrival", 1, "jobs_clickstream"),
            ("jobs_clickstream, small increment", 2, "jobs_clickstream"),
            ("jobs_clickstream, nothing new", None, "jobs_clickstream"),
            ("jobs_data_quality", None, "jobs_data_quality"),
            ("jobs_data_quality, nothing changed", None, "jobs_data_quality"),
        ]
        for label, arrival, dag_id in runs:
            if arrival is not None:
                _land(landing, arrival, args.events, args.files)
            _show(label, *_dag_run(home, root, dag_id))


if __name__ == "__main__":
    main()
