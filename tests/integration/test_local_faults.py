"""Faults of a local disk: a folder the run may not write, a disk that is full. The run
fails with the root cause in its one-line error, and the next run, once the fault is
gone, goes on exactly once."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from jobs.run.report import load_reports
from jobs.run.runner import RunFailed
from tests.helpers import all_lines, event, land, run_pipeline, table_rows
from tests.model import ClickstreamModel

ROOT = os.geteuid() == 0
FIRST = {"a.json": [event("u1", "2023-07-30T10:00:10Z"), event("u2", "2023-07-30T10:30:00Z")]}
SECOND = {"b.json": [event("u1", "2023-07-30T11:00:00Z")]}


@contextlib.contextmanager
def _read_only(folder: Path):
    """No new file in `folder` or its sub-folders: immutable for root (who ignores
    permission bits), else mode 555."""
    folders = [folder, *(path for path in folder.rglob("*") if path.is_dir())]
    for path in folders:
        subprocess.run(["chattr", "+i", str(path)], check=True) if ROOT else path.chmod(0o555)
    try:
        yield
    finally:
        for path in folders:
            subprocess.run(["chattr", "-i", str(path)], check=True) if ROOT else path.chmod(0o755)


def test_a_read_only_output_folder_is_named_in_the_error(spark, clickstream, locations):
    land(locations.landing, FIRST)
    run_pipeline(spark, clickstream, locations)
    land(locations.landing, SECOND)
    output = Path(locations.output)
    with _read_only(output), pytest.raises(RunFailed) as failed:
        run_pipeline(spark, clickstream, locations)
    assert str(failed.value).startswith(f"permission denied on {output}/"), failed.value

    run_pipeline(spark, clickstream, locations)
    model = ClickstreamModel()
    model.run([all_lines(FIRST), all_lines(SECOND)])
    assert table_rows(spark, locations.output) == model.rows()
    assert sum(r.input_rows for r in load_reports(locations.runs)) == 3


@pytest.mark.skipif(not ROOT, reason="mounting a small disk needs root")
def test_a_full_disk_is_named_in_the_error(spark, clickstream, tmp_path):
    from jobs.lake.layout import Locations

    disk = tmp_path / "small-disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(disk)], check=True)
    try:
        locations = Locations.resolve(clickstream.name, root=str(disk))
        # Enough that the checkpoint, state and output outgrow the disk.
        land(
            locations.landing, {"a.json": [event(f"u{i}", "2023-07-30T10:00:10Z", pad="x" * 200) for i in range(1500)]}
        )
        with pytest.raises(RunFailed) as failed:
            run_pipeline(spark, clickstream, locations)
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)
    assert str(failed.value).startswith("the disk is full"), failed.value
