"""Kill the run process at any moment, rerun, and nothing is duplicated or missing."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jobs.lake.layout import Locations
from jobs.run.report import RunReport, load_reports
from tests.helpers import REPO, event, land_in_order, python_cmd, table_rows
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


def start_run(root: Path) -> subprocess.Popen:
    return subprocess.Popen(
        python_cmd("run", "clickstream", "--root", str(root), "--max-files-per-trigger", "1"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


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


def mid_batch(checkpoint: Path) -> bool:
    """Batch 3 planned (offsets written) but not committed: its output is being written."""
    return (checkpoint / "offsets" / "3").exists() and not (checkpoint / "commits" / "3").exists()


def just_committed(checkpoint: Path) -> bool:
    """Batch 4 committed: the next batch starts, and batch 4's accounting may not be done."""
    return (checkpoint / "commits" / "4").exists()


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
@pytest.mark.parametrize("kill_when", [mid_batch, just_committed], ids=["mid-batch", "after-commit"])
def test_a_killed_run_resumes_without_loss_or_duplicates(spark, tmp_path, baseline, kill_when):
    files = arrival_files()
    crashed = tmp_path / "crashed"
    land_in_order(str(crashed / "landing" / "clickstream"), files)

    victim = start_run(crashed)
    checkpoint = crashed / "checkpoints" / "clickstream"
    deadline = time.monotonic() + 180
    while not kill_when(checkpoint) and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert victim.poll() is None, "the run finished before it could be killed:\n" + victim.stdout.read()
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL

    rerun = start_run(crashed)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out

    model = ClickstreamModel()
    model.run(list(files.values()))
    assert table(spark, crashed) == table(spark, baseline) == model.rows()
    assert quarantine(crashed) == quarantine(baseline)
    assert len(quarantine(crashed)) == len(files)
    # Every input row is accounted for exactly once across the runs that completed.
    total_rows = sum(len(lines) for lines in files.values())
    crashed_reports = reports(crashed)
    assert sum(r.input_rows for r in crashed_reports) == total_rows
    assert sum(r.late_rows_dropped for r in crashed_reports) == sum(r.late_rows_dropped for r in reports(baseline))


def written_not_committed(table: Path) -> bool:
    """An output file is in the table folder that the sink log does not list yet: the
    batch wrote it, and has not committed."""
    written = {path.name for path in table.rglob("part-*")}
    if not written:
        return False
    logged = {
        Path(json.loads(line)["path"]).name
        for log in (table / "_spark_metadata").glob("[0-9]*")
        for line in log.read_text().splitlines()[1:]
    }
    return bool(written - logged)


@pytest.mark.slow
def test_a_run_killed_between_writing_and_committing_leaves_only_committed_files(spark, tmp_path, baseline):
    """What a plain reader of the folder (pyarrow here; DuckDB, pandas, Athena alike) reads
    after the rerun equals what Spark reads through the sink log."""
    import pyarrow.parquet as pq

    files = arrival_files()
    crashed = tmp_path / "crashed"
    land_in_order(str(crashed / "landing" / "clickstream"), files)
    table_folder = crashed / "tables" / "clickstream"

    victim = start_run(crashed)
    deadline = time.monotonic() + 180
    while victim.poll() is None and time.monotonic() < deadline:
        if written_not_committed(table_folder):
            victim.send_signal(signal.SIGKILL)
            break
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL, "never caught a batch between write and commit"
    assert written_not_committed(table_folder)

    rerun = start_run(crashed)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert "never committed" in out
    [report] = [r for r in reports(crashed) if r.status == "succeeded"]
    assert report.uncommitted_files_removed >= 1

    plain = pq.read_table(table_folder).to_pylist()
    # Spark writes timestamps as INT96, which pyarrow reads without a zone: they are UTC.
    utc = lambda t: t.to_pydatetime().replace(tzinfo=UTC)  # noqa: E731
    read_plainly = sorted((utc(r["window_start"]), utc(r["window_end"]), r["user_id"], r["event_count"]) for r in plain)
    assert read_plainly == table(spark, crashed) == table(spark, baseline)
