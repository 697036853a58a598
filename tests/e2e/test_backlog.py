"""A backlog bigger than one batch should be: admission control, and a driver out of memory."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.helpers import REPO, all_lines, declaration_copy, event, land_in_order, python_cmd, run_pipeline, table_rows
from tests.model import ClickstreamModel


def test_a_declared_limit_splits_a_backlog_and_a_run_option_overrides_it(spark, clickstream, tmp_path, caplog):
    declared = clickstream.model_copy(
        update={"spark_settings": clickstream.spark_settings.model_copy(update={"max_files_per_trigger": 2})}
    )
    files = {
        f"part-{i}.json": [event(f"u{i}", f"2023-07-30T10:{i:02d}:00Z", f"e{i}-{n}") for n in range(3)]
        for i in range(6)
    }
    locations = Locations.resolve("clickstream", root=str(tmp_path / "root"))
    land_in_order(locations.landing, files)

    report = run_pipeline(spark, declared, locations)
    assert report.batch_limits == {
        "max_files": 2,
        "max_bytes": None,
        "chosen_by": "declaration",
        "inflation": 1.0,
        "sized_cap": None,
        "state_budget": None,
        "most_files": None,
    }
    assert report.batches == 3 + 1  # three of two files each, then the watermark's no-data batch
    assert "  start: at most 2 new files per batch (declaration)" in caplog.messages

    more = {f"more-{i}.json": [event("v", f"2023-07-30T11:{i:02d}:00Z", f"m{i}")] for i in range(3)}
    land_in_order(locations.landing, more)
    again = run_pipeline(spark, declared, locations, max_files_per_trigger=1)
    assert again.batch_limits["chosen_by"] == "run" and again.batches == 3 + 1

    model = ClickstreamModel()
    model.run([all_lines(dict(list(files.items())[i : i + 2])) for i in range(0, 6, 2)])
    model.run([lines for lines in more.values()])
    assert table_rows(spark, locations.output) == model.rows()


def test_the_default_limit_is_a_sixteenth_of_the_driver_heap(spark, clickstream, locations):
    land_in_order(locations.landing, {"one.json": [event("u", "2023-07-30T10:00:00Z")]})
    report = run_pipeline(spark, clickstream, locations)
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    assert report.batch_limits == {
        "max_files": None,
        "max_bytes": max(heap // 16, 8 * 2**20),
        "chosen_by": "default",
        "inflation": 1.0,
        "sized_cap": max(heap // 8, 8 * 2**20),
        "state_budget": heap // 4,
        "most_files": max(heap // 16 // 2048, 1000),  # a few KiB of the driver's per file of a batch
    }
    # One batch of data and the watermark's batch after it, which reads no file: none sized.
    assert report.batch_sizes == []


@pytest.mark.slow
def test_a_driver_out_of_memory_is_one_clear_line_and_a_rerun_with_more_memory_counts_once(spark, tmp_path):
    # What runs a small driver out of memory at once, every time: a 40 MiB line (a producer's
    # file without line ends) read on a 192 MiB heap. Spark starts with at least 450 MiB
    # unless told (spark.testing.memory) how much to assume.
    landing = tmp_path / "landing"
    landing.mkdir()
    events = [event(f"u{i % 3}", f"2023-07-30T10:{i:02d}:00Z", f"e{i}") for i in range(10)]
    lines = [*events[:5], "x" * (40 * 2**20), *events[5:]]
    (landing / "events.json").write_text("\n".join(lines) + "\n")
    pipelines = tmp_path / "pipelines"
    declaration_copy(
        pipelines, "clickstream", spark={"driver_memory": "192m", "conf": {"spark.testing.memory": "536870912"}}
    )
    env = {**os.environ, "JOBS_PIPELINES_DIR": str(pipelines)}
    root = tmp_path / "root"
    command = python_cmd("run", "clickstream", "--root", str(root), "--landing", str(landing), "--no-validate")

    failed = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert failed.returncode == ExitCode.FAILED, failed.stdout + failed.stderr
    errors = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, failed.stderr
    assert "the Spark driver ran out of memory in batch 0: give the driver more memory" in errors[0]
    assert "the next run redoes batch 0 with the same files" in errors[0]
    # heap / 16, and heap / 8 for a sized batch
    assert re.search(
        r"--max-bytes-per-trigger \(this run: about 1\d MiB per batch, sized up to \d\d MiB after", errors[0]
    )
    assert not [line for line in failed.stderr.splitlines() if line.lstrip().startswith("at ")], "no stack trace"
    locations = Locations.resolve("clickstream", root=str(root))
    (report,) = load_reports(locations.runs)
    assert report.status == "failed" and "ran out of memory in batch 0" in report.error

    declaration_copy(pipelines, "clickstream", spark={"driver_memory": "1g"})
    rerun = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr

    model = ClickstreamModel()
    expected = model.run([lines])
    assert table_rows(spark, locations.output) == model.rows()
    reports = load_reports(locations.runs)
    assert sum(r.input_rows for r in reports) == expected.input_rows == 11
    assert sum(r.quarantined_rows for r in reports) == expected.quarantined_rows == 1
    assert sum(r.used_rows for r in reports) == expected.used_rows
