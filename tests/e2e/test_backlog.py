"""A backlog bigger than one batch should be: admission control, and a driver out of memory."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from benchmarks.clickstream_data import generate
from jobs.declare.load import pipelines_dir
from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.helpers import REPO, all_lines, event, land_in_order, python_cmd, run_pipeline, table_rows
from tests.model import ClickstreamModel


def _declared(folder, **spark) -> None:
    """A copy of the clickstream declaration with a `spark:` block, as a pipelines folder."""
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    folder.mkdir(exist_ok=True)
    (folder / "clickstream.yaml").write_text(yaml.safe_dump({**raw, "spark": spark}))


def test_a_declared_limit_splits_a_backlog_and_a_run_option_overrides_it(spark, clickstream, tmp_path, quiet):
    declared = clickstream.model_copy(
        update={"spark": clickstream.spark.model_copy(update={"max_files_per_trigger": 2})}
    )
    files = {
        f"part-{i}.json": [event(f"u{i}", f"2023-07-30T10:{i:02d}:00Z", f"e{i}-{n}") for n in range(3)]
        for i in range(6)
    }
    locations = Locations.resolve("clickstream", root=str(tmp_path / "root"))
    land_in_order(locations.landing, files)

    report = run_pipeline(spark, declared, locations, quiet)
    assert report.batch_limits == {"max_files": 2, "max_bytes": None, "chosen_by": "declaration"}
    assert report.batches == 3 + 1  # three of two files each, then the watermark's no-data batch
    assert "  at most 2 new files per batch (declaration)" in quiet

    more = {f"more-{i}.json": [event("v", f"2023-07-30T11:{i:02d}:00Z", f"m{i}")] for i in range(3)}
    land_in_order(locations.landing, more)
    again = run_pipeline(spark, declared, locations, quiet, max_files_per_trigger=1)
    assert again.batch_limits["chosen_by"] == "run" and again.batches == 3 + 1

    model = ClickstreamModel()
    model.run([all_lines(dict(list(files.items())[i : i + 2])) for i in range(0, 6, 2)])
    model.run([lines for lines in more.values()])
    assert table_rows(spark, locations.output) == model.rows()


def test_the_default_limit_is_a_sixteenth_of_the_driver_heap(spark, clickstream, locations, quiet):
    land_in_order(locations.landing, {"one.json": [event("u", "2023-07-30T10:00:00Z")]})
    report = run_pipeline(spark, clickstream, locations, quiet)
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    assert report.batch_limits == {"max_files": None, "max_bytes": max(heap // 16, 8 * 2**20), "chosen_by": "default"}


@pytest.mark.slow
def test_a_driver_out_of_memory_is_one_clear_line_and_a_rerun_with_more_memory_counts_once(spark, tmp_path):
    landing = generate(tmp_path / "landing", events=600_000, files=6)
    pipelines = tmp_path / "pipelines"
    # A small heap and a cap far above what it holds: Spark starts with at least 450 MiB
    # unless told (spark.testing.memory) how much to assume.
    _declared(pipelines, driver_memory="256m", max_bytes_per_trigger="1g", conf={"spark.testing.memory": "536870912"})
    env = {**os.environ, "JOBS_PIPELINES_DIR": str(pipelines)}
    root = tmp_path / "root"
    command = python_cmd("run", "clickstream", "--root", str(root), "--landing", str(landing), "--no-validate")

    failed = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert failed.returncode == ExitCode.FAILED, failed.stdout + failed.stderr
    errors = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, failed.stderr
    assert re.search(r"ran out of memory( in batch \d+)?: .*driver_memory", errors[0]), errors[0]
    assert "--max-bytes-per-trigger (this run: about 1,024 MiB per batch)" in errors[0]
    assert not [line for line in failed.stderr.splitlines() if line.lstrip().startswith("at ")], "no stack trace"
    (report,) = load_reports(Locations.resolve("clickstream", root=str(root)).runs)
    assert report.status == "failed" and "ran out of memory" in report.error

    _declared(pipelines, driver_memory="1g", max_bytes_per_trigger="1g")
    rerun = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr

    lines = [line for path in sorted(landing.glob("*.json")) for line in path.read_text().splitlines()]
    model = ClickstreamModel()
    expected = model.run([lines])  # the failed run planned every file into batch 0; the rerun redid it as planned
    locations = Locations.resolve("clickstream", root=str(root))
    assert table_rows(spark, locations.output) == model.rows()
    reports = load_reports(locations.runs)
    assert sum(r.input_rows for r in reports) == expected.input_rows == 600_000
    assert sum(r.quarantined_rows for r in reports) == expected.quarantined_rows
    assert sum(r.used_rows for r in reports) == expected.used_rows
