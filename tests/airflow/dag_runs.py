"""Running a DAG for the Airflow tests: a real Airflow with its own AIRFLOW_HOME and SQLite
metadata DB (the `airflow_home` fixture), the project's dags folder, `airflow dags test`
as a process, and what it left in the metadata DB (task states, XComs)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil

from jobs.accounting.checkpoint import CheckpointLog
from jobs.lake.layout import Locations
from tests.helpers import REPO, event

AIRFLOW = str(Path(sys.executable).parent / "airflow")


def airflow_env(home: Path, root: str, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "JOBS_ROOT": root,
        "JOBS_RETRY_DELAY_S": "2",
    }
    env.update(extra)
    return env


T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def arrivals(first: int, count: int) -> dict[str, list[str]]:
    """`count` files, 4 minutes of events each, with a late and an unusable row."""
    return {
        f"part-{i}.json": [event(f"u{j % 3}", at(4 * i + 0.3 * j)) for j in range(10)]
        + [event("late", at(4 * i - 12)), "{unusable"]
        for i in range(first, first + count)
    }


@dataclass
class DagRun:
    run_id: str
    state: str
    output: str
    home: Path
    dag_id: str
    table: list[tuple] | None = None  # filled in by tests that read the table after the run
    reports: list[dict] | None = None

    def tasks(self) -> dict[str, tuple[str, int]]:
        """task_id -> (state, try_number), from the metadata DB."""
        with sqlite3.connect(self.home / "airflow.db") as db:
            rows = db.execute(
                "select task_id, state, try_number from task_instance where dag_id = ? and run_id = ?",
                (self.dag_id, self.run_id),
            ).fetchall()
        return {task: (state, tries) for task, state, tries in rows}

    def xcom(self, task_id: str, key: str = "return_value"):
        with sqlite3.connect(self.home / "airflow.db") as db:
            (value,) = db.execute(
                "select value from xcom where dag_id = ? and run_id = ? and task_id = ? and key = ?",
                (self.dag_id, self.run_id, task_id, key),
            ).fetchone()
        return json.loads(value)


def asset_events(home: Path, uri: str) -> list[dict]:
    """The extras of the events of the Asset `uri`, oldest first, from the metadata DB."""
    with sqlite3.connect(home / "airflow.db") as db:
        rows = db.execute(
            "select e.extra from asset_event e join asset a on a.id = e.asset_id where a.uri = ? order by e.id", (uri,)
        ).fetchall()
    return [json.loads(extra) if extra else {} for (extra,) in rows]


def dags_test(
    home: Path,
    root: str,
    dag_id: str,
    conf: dict | None = None,
    watch: Callable[[subprocess.Popen], None] | None = None,
    **env: str,
) -> DagRun:
    log = home / f"{dag_id}-{time.monotonic_ns()}.log"
    command = [AIRFLOW, "dags", "test", dag_id, *(["--conf", json.dumps(conf)] if conf else [])]
    started = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(command, env=airflow_env(home, root, **env), stdout=out, stderr=subprocess.STDOUT)
        if watch:
            watch(process)
        process.wait(timeout=900)
    output = log.read_text()
    print(f"airflow dags test {dag_id}: {time.monotonic() - started:.0f}s")
    finished = [line for line in output.splitlines() if "DagRun Finished" in line]
    assert finished, output[-5000:]
    fields = dict(part.split("=", 1) for part in finished[-1].replace(",", " ").split() if "=" in part)
    return DagRun(fields["run_id"], fields["state"], output, home, dag_id)


def batches_as_spark_ran(locations: Locations, files: dict[str, list[str]], reports) -> list[list[str]]:
    """The lines of each batch of these runs, as the checkpoint says it read them. Mostly
    one file per batch (max_files_per_trigger 1); but a driver killed after the file source
    logged its next file and before the offset log named it leaves that file to the next
    batch, beside the file that batch takes (Spark's own behaviour on restart: the restarted
    query's next batch ends at the file source's newest entry). The batch then judges late
    rows of both files against one watermark, and a model that assumed a file per batch
    would expect another table."""
    checkpoint_log = CheckpointLog.of(locations)
    batch_ids = sorted({batch for report in reports for batch in report.batch_ids})
    return [[line for path in checkpoint_log.source_files(b) for line in files[Path(path).name]] for b in batch_ids]


def kill_the_run_after(checkpoint: Path, root: Path, killed: list[int]) -> Callable[[subprocess.Popen], None]:
    """Kills the Spark driver of the run task (SIGKILL, no clean-up) once batch 1 committed."""

    def watch(process: subprocess.Popen) -> None:
        deadline = time.monotonic() + 600
        while process.poll() is None and not killed and time.monotonic() < deadline:
            if (checkpoint / "commits" / "1").exists():
                for candidate in psutil.process_iter(["cmdline"]):
                    line = candidate.info["cmdline"] or []
                    is_driver = line and "python" in Path(line[0]).name and any("spark_submit.py" in a for a in line)
                    # `run --request=<JSON naming the root's locations>`, or another command's --root
                    asks = any(a == f"--root={root}" or (a.startswith("--request=") and str(root) in a) for a in line)
                    if is_driver and asks and "run" in line:
                        candidate.kill()
                        killed.append(candidate.pid)
            time.sleep(0.05)

    return watch
