"""A chain of two pipelines (events -> windows over its table) with a crash at each level: the
run process and its JVM killed mid-batch, an output file written and not committed. The
downstream never reads what the upstream did not commit, and reads each committed row once:
its table ends equal to the window model fed the landed files each of its batches read (as
the two checkpoints say), and its input is the upstream's output, file by file. The upstream
a Parquet table (read through its sink log) and a Delta table (Delta's source)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger
from jobs.lake import delta
from jobs.lake.builds import in_use
from jobs.lake.layout import Locations
from tests.e2e.test_crash import arrival_files, crash
from tests.helpers import REPO, land_in_order, python_cmd, table_rows
from tests.integration.test_table_sources import PER_MINUTE, RAW, rows_per_file
from tests.model import WindowModel, clickstream_reading

pytestmark = pytest.mark.slow


def declared(root: Path, table_format: str = "parquet") -> dict[str, str]:
    folder = root / "pipelines"
    folder.mkdir(parents=True, exist_ok=True)
    for raw in ({**RAW, "output": {"format": table_format}}, PER_MINUTE):
        (folder / f"{raw['name']}.yaml").write_text(yaml.safe_dump(raw))
    return {**os.environ, "JOBS_PIPELINES_DIR": str(folder)}


def start(root: Path, name: str) -> subprocess.Popen:
    """A run of one level, a file per batch, in a session of its own (`crash` kills its JVM too)."""
    return subprocess.Popen(
        python_cmd("run", name, "--root", str(root), "--max-files-per-trigger", "1", "--no-validate"),
        cwd=REPO,
        env={**os.environ, "JOBS_PIPELINES_DIR": str(root / "pipelines")},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def finish(run: subprocess.Popen) -> str:
    out, _ = run.communicate(timeout=300)
    assert run.returncode == 0, out
    return out


def crash_mid_batch(root: Path, name: str) -> None:
    """Start a run of `name` and kill it once a batch wrote an output file it has not committed."""
    table = root / "tables" / name
    victim = start(root, name)
    deadline = time.monotonic() + 180
    while not written_not_committed_in(table) and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    assert victim.poll() is None, "the run finished before it could be killed:\n" + victim.stdout.read()
    crash(victim)
    assert written_not_committed_in(table)


def written_not_committed_in(table: Path) -> bool:
    """A data file in the table's folder that its log (a sink log, or Delta's) does not list yet."""
    written = {path.name for path in table.rglob("part-*")}
    logged = {
        Path(json.loads(line)["path"]).name
        for log in (table / "_spark_metadata").glob("[0-9]*")
        for line in log.read_text().splitlines()[1:]
    }
    logged |= {
        Path(json.loads(line)["add"]["path"]).name
        for log in (table / "_delta_log").glob("*.json")
        for line in log.read_text().splitlines()
        if '"add"' in line and "add" in json.loads(line)
    }
    return bool(written - logged)


def lines_of_each_batch(upstream: Locations, downstream: Locations, files: dict[str, list[str]]) -> list[list[str]]:
    """The landed lines each committed batch of the downstream read, as the checkpoints say:
    its upstream data files, the upstream batch (or Delta version) that committed each, and
    the landed file that batch read."""
    up, down = CheckpointLog.of(upstream), CheckpointLog.of(downstream)
    committed_by = CheckpointLog("", upstream.output).committing_batches()
    if up.is_delta():  # a version -> the upstream's batch it committed
        batch_of = {delta.batch_version(upstream.output, up.query_id(), b): b for b in up.committed_batches()}
        committed_by = {path: batch_of[version] for path, version in committed_by.items()}
    batches = []
    for batch in down.committed_batches():
        upstream_batches = sorted({committed_by[path] for path in down.source_files(batch)})
        landed = [Path(path).name for b in upstream_batches for path in up.source_files(b)]
        batches.append([line for name in landed for line in files[name]])
    return batches


@pytest.mark.parametrize("table_format", ["parquet", "delta"])
def test_a_crash_at_each_level_of_a_chain_loses_and_repeats_no_row(spark, tmp_path, table_format):
    files = arrival_files()
    root = tmp_path / "chain"
    raw, per_minute = RAW["name"], PER_MINUTE["name"]
    declared(root, table_format)
    land_in_order(str(root / "landing" / raw), files)

    crash_mid_batch(root, raw)  # the upstream killed with a batch written, not committed
    finish(start(root, per_minute))  # reads only what the upstream committed
    finish(start(root, raw))  # redoes its batch, then the rest
    crash_mid_batch(root, per_minute)  # the downstream killed the same way
    finish(start(root, per_minute))

    model = WindowModel(
        read=clickstream_reading,
        finish=lambda values: (len(values),),
        delay=timedelta(minutes=5),
        window=timedelta(minutes=1),
    )
    upstream, downstream = in_use(raw, str(root)), in_use(per_minute, str(root), reads=raw)
    committed = CheckpointLog("", upstream.output).committed_output_files()
    taken = {f["path"]: f["input_rows"] for f in taken_files(Ledger(downstream.ledger), CheckpointLog.of(downstream))}
    assert taken == rows_per_file(list(committed))
    usable = [[line for line in lines if clickstream_reading(line)] for lines in files.values()]
    assert sum(taken.values()) == sum(len(lines) for lines in usable)
    batches = lines_of_each_batch(upstream, downstream, files)
    assert sorted(line for lines in batches for line in lines) == sorted(
        line for lines in files.values() for line in lines
    )
    model.run([[line for line in lines if clickstream_reading(line)] for lines in batches])
    assert table_rows(spark, downstream.output) == model.rows()
