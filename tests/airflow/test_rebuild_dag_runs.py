"""The rebuild DAG, run for real (`airflow dags test`): clickstream changed to 5-minute
windows and rebuilt, its Spark driver killed mid-build and the task retried (the same build
resumes); then the pipeline's own DAG runs the new build, never the old checkpoint."""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import psutil
import pytest

from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.lake.builds import current_build, in_use
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.airflow.dag_runs import arrivals, batches_as_spark_ran, dags_test
from tests.helpers import all_lines, declaration_copy, land_in_order, run_pipeline, table_rows
from tests.model import ClickstreamModel

pytestmark = pytest.mark.slow


def kill_the_rebuild_after_its_batch_1(root: Path, killed: list[int]):
    def watch(process: subprocess.Popen) -> None:
        deadline = time.monotonic() + 600
        while process.poll() is None and not killed and time.monotonic() < deadline:
            if list(root.glob("builds/clickstream/*/checkpoints/clickstream/commits/1")):
                for candidate in psutil.process_iter(["cmdline"]):
                    line = candidate.info["cmdline"] or []
                    is_driver = line and "python" in Path(line[0]).name and any("spark_submit.py" in a for a in line)
                    if is_driver and "rebuild" in line:
                        candidate.kill()
                        killed.append(candidate.pid)
            time.sleep(0.05)

    return watch


def test_a_rebuild_killed_and_retried_then_the_pipeline_dag_runs_the_new_build(airflow_home, tmp_path, spark):
    root = tmp_path / "root"
    original = Locations.resolve("clickstream", root=str(root))
    first, later = arrivals(0, 5), arrivals(5, 2)
    land_in_order(original.landing, first)
    assert run_pipeline(spark, declare.load("clickstream"), original).status == "succeeded"
    committed = CheckpointLog.of(original).committed_batches()
    changed = declaration_copy(tmp_path / "pipelines", "clickstream", window={"duration": "5 minutes"})

    killed: list[int] = []
    run = dags_test(
        airflow_home,
        str(root),
        "jobs_rebuild",
        {"pipeline": "clickstream", "max_files_per_trigger": 1},
        kill_the_rebuild_after_its_batch_1(root, killed),
        JOBS_PIPELINES_DIR=str(changed),
    )

    assert run.state == "success", run.output[-5000:]
    assert killed, "the rebuild's driver was not killed"
    pointer = current_build(str(root), "clickstream")
    model = replace(ClickstreamModel(), window=timedelta(minutes=5))
    build = in_use("clickstream", str(root))
    model.run(batches_as_spark_ran(build, first, load_reports(build.runs)))  # mostly a file per batch
    assert build.checkpoint == pointer.about["checkpoint"] and table_rows(spark, build.output) == model.rows()

    land_in_order(original.landing, later)
    again = dags_test(
        airflow_home, str(root), "jobs_clickstream", {"max_files_per_trigger": 1}, JOBS_PIPELINES_DIR=str(changed)
    )
    assert again.state == "success", again.output[-5000:]
    model.run([all_lines({name: lines}) for name, lines in later.items()])
    assert table_rows(spark, build.output) == model.rows()
    assert CheckpointLog.of(original).committed_batches() == committed  # the old one: as it was
