"""Kill the run process at any moment, rerun, and nothing is duplicated or missing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from infra import processes
from jobs.lake.layout import Locations
from jobs.run.report import RunReport, load_reports
from tests.helpers import REPO, declaration_copy, delta_rs_rows, event, land_in_order, python_cmd, table_rows
from tests.model import ClickstreamModel

T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)


def arrival_files() -> dict[str, list[str]]:
    """Eight files, one batch each, with late and unusable rows along the way."""
    files = {}
    for i in range(8):
        base = T0 + timedelta(minutes=4 * i)
        lines = [
            event(f"u{j % 3}", (base + timedelta(seconds=17 * j)).strftime("%Y-%m-%dT%H:%M:%SZ")) for j in range(12)
        ]
        lines.append(event("late", (base - timedelta(minutes=9)).strftime("%Y-%m-%dT%H:%M:%SZ")))
        lines.append("{unusable")
        files[f"part-{i}.json"] = lines
    return files


def declared(root: Path, table_format: str) -> dict[str, str]:
    """The environment of a run of clickstream with its table in `table_format`."""
    output = {"format": table_format, "partition_by": "window_date"}
    return {**os.environ, "JOBS_PIPELINES_DIR": str(declaration_copy(root / "pipelines", "clickstream", output=output))}


def start_run(root: Path, table_format: str = "parquet") -> subprocess.Popen:
    """The run in a session of its own: killed, its JVM dies with it (`crash`)."""
    return subprocess.Popen(
        python_cmd("run", "clickstream", "--root", str(root), "--max-files-per-trigger", "1"),
        cwd=REPO,
        env=declared(root, table_format),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def crash(run: subprocess.Popen) -> None:
    """SIGKILL to the run's process and its JVM at once, as a lost node or the OOM killer of its
    container: the JVM of a driver killed alone lives on until it notices, and may commit the
    batch meanwhile."""
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    deadline = time.monotonic() + 30
    while processes.group_alive(run.pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def table(spark, root: Path) -> list[tuple]:
    return table_rows(spark, str(root / "tables" / "clickstream"))


def quarantine(root: Path) -> list[tuple[str, str, str]]:
    """(file name, line, reason) of every quarantined row."""
    rows = [
        json.loads(line)
        for path in (root / "quarantine" / "clickstream").glob("*/*.json")
        for line in path.read_text().splitlines()
    ]
    return sorted((Path(r["source_file"]).name, r["line"], r["reason"]) for r in rows)


def reports(root: Path) -> list[RunReport]:
    return load_reports(Locations.resolve("clickstream", root=str(root)).runs)


def written_not_committed(root: Path) -> bool:
    """Mid-batch, at its most awkward: an output file is in the table folder that the
    table's log (Parquet's sink log, or Delta's) does not list yet (the batch wrote it and
    has not committed)."""
    table = root / "tables" / "clickstream"
    written = {path.name for path in table.rglob("part-*")}
    if not written:
        return False
    logged = {
        Path(json.loads(line)["path"]).name
        for log in (table / "_spark_metadata").glob("[0-9]*")
        for line in log.read_text().splitlines()[1:]
    }
    logged |= {
        Path(json.loads(line)["add"]["path"]).name
        for log in (table / "_delta_log").glob("*.json")
        for line in log.read_text().splitlines()
        if '"add"' in line
    }
    return bool(written - logged)


def just_committed(root: Path) -> bool:
    """Batch 4 committed: the next batch starts, and batch 4's accounting may not be done."""
    return (root / "checkpoints" / "clickstream" / "commits" / "4").exists()


def read_plainly(folder: Path) -> list[tuple]:
    """The clickstream table as a plain Parquet reader of the folder sees it (pyarrow here;
    DuckDB, pandas and Athena list the folder alike), as `table` gives it."""
    import pyarrow.parquet as pq

    # Spark writes timestamps as INT96, which pyarrow reads without a zone: they are UTC.
    def utc(t):
        return t.to_pydatetime().replace(tzinfo=UTC)

    rows = pq.read_table(folder).to_pylist()
    return sorted((utc(r["window_start"]), utc(r["window_end"]), r["user_id"], r["event_count"]) for r in rows)


def read_by_delta_rs(folder: Path) -> list[tuple]:
    """The clickstream Delta table as delta-rs (no Spark) reads it, as `table` gives it."""
    columns = ["window_start", "window_end", "user_id", "event_count"]
    return sorted(delta_rs_rows(str(folder), columns))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    """The same files run by an uninterrupted process: what every crashed run must end equal to."""
    root = tmp_path_factory.mktemp("baseline")
    land_in_order(str(root / "landing" / "clickstream"), arrival_files())
    run = start_run(root)
    out, _ = run.communicate(timeout=300)
    assert run.returncode == 0, out
    return root


@pytest.mark.slow
@pytest.mark.parametrize("table_format", ["parquet", "delta"])
@pytest.mark.parametrize("kill_when", [written_not_committed, just_committed], ids=["mid-batch", "after-commit"])
def test_a_killed_run_resumes_without_loss_or_duplicates(spark, tmp_path, baseline, kill_when, table_format):
    files = arrival_files()
    crashed = tmp_path / "crashed"
    land_in_order(str(crashed / "landing" / "clickstream"), files)

    victim = start_run(crashed, table_format)
    deadline = time.monotonic() + 180
    while not kill_when(crashed) and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)  # a batch's write and its commit can be milliseconds apart
    assert victim.poll() is None, "the run finished before it could be killed:\n" + victim.stdout.read()
    crash(victim)
    assert victim.returncode == -signal.SIGKILL
    left_behind = written_not_committed(crashed)
    assert left_behind or kill_when is just_committed

    rerun = start_run(crashed, table_format)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out

    model = ClickstreamModel()
    model.run(list(files.values()))
    assert table(spark, crashed) == table(spark, baseline) == model.rows()
    [rerun_report] = [r for r in reports(crashed) if r.status == "succeeded"]
    if table_format == "parquet":
        # The folder holds only committed files: what the uncommitted batch wrote is gone.
        assert read_plainly(crashed / "tables" / "clickstream") == table(spark, crashed)
        assert (rerun_report.uncommitted_files_removed > 0) == left_behind
        assert ("never committed" in out) == left_behind
    else:
        # Readers of a Delta table go through its log, which never names what a batch wrote
        # and did not commit (VACUUM removes those files): delta-rs sees the same table.
        assert read_by_delta_rs(crashed / "tables" / "clickstream") == table(spark, crashed)
        assert rerun_report.uncommitted_files_removed == 0
    assert quarantine(crashed) == quarantine(baseline)
    assert len(quarantine(crashed)) == len(files)
    # Every input row is accounted for exactly once across the runs that completed.
    total_rows = sum(len(lines) for lines in files.values())
    crashed_reports = reports(crashed)
    assert sum(r.input_rows for r in crashed_reports) == total_rows
    assert sum(r.late_rows_dropped for r in crashed_reports) == sum(r.late_rows_dropped for r in reports(baseline))
