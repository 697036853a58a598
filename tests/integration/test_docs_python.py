"""docs/python.md's worked examples run as the page says, as a team runs them: its module,
declaration and suite written to a folder outside the checkout, its lines landed there, and
`python -m jobs run` from that folder (real spark-submit, the transform's pandas_udf in
Spark's Python workers, the validation). The table holds exactly the rows the page shows."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from jobs.lake.layout import Locations
from tests.helpers import REPO, land_in_order, python_cmd

PAGE = (REPO / "docs" / "python.md").read_text()
WORKED = PAGE.split("## Worked example", 1)[1].split("\n## ", 1)[0]
PROCESSORS = PAGE.split("### Worked example: payment sessions", 1)[1]


def run_from_a_folder(tmp_path: Path, example: str, module: str, pipeline: str) -> tuple[list[dict], Locations]:
    """The example's module, declaration and suite in a team's folder, its lines landed, and
    `python -m jobs run` from there; (the rows the page shows, where the run wrote)."""
    (code,) = re.findall(r"```python\n(.*?)```", example, re.S)
    declaration, suite = re.findall(r"```yaml\n(.*?)```", example, re.S)
    landed, written = re.findall(r"```json\n(.*?)```", example, re.S)
    team = tmp_path / "team"
    for folder, name, text in (
        ("pipelines", module, code),
        ("pipelines", f"{pipeline}.yaml", declaration),
        ("expectations", f"{pipeline}.yaml", suite),
    ):
        (team / folder).mkdir(parents=True, exist_ok=True)
        (team / folder / name).write_text(text)
    root = tmp_path / "root"
    land_in_order(str(root / "landing" / pipeline), {"landed.json": landed.splitlines()})
    env = {
        **os.environ,
        "JOBS_PIPELINES_DIR": str(team / "pipelines"),
        "JOBS_EXPECTATIONS_DIR": str(team / "expectations"),
    }
    ran = subprocess.run(
        python_cmd("run", pipeline, "--root", str(root)), cwd=team, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    return [json.loads(row) for row in written.splitlines()], Locations.resolve(pipeline, root=str(root))


def report_of(locations: Locations) -> dict:
    (report,) = (json.loads(p.read_text()) for p in Path(locations.runs).glob("*Z-??????.json"))
    assert report["status"] == "succeeded" and not report["not_validated"]
    return report


def test_the_worked_example_runs_from_a_folder_of_its_own(spark, tmp_path):
    shown, locations = run_from_a_folder(tmp_path, WORKED, "site_rules.py", "page_views")
    columns = list(shown[0])
    table = [row.asDict() for row in spark.read.parquet(locations.output).select(*columns).collect()]
    assert sorted(table, key=lambda r: r["event_id"]) == shown
    report = report_of(locations)
    assert (report["input_rows"], report["used_rows"], report["filtered_rows"]) == (5, 3, 2)


def test_the_processors_worked_example_runs_from_a_folder_of_its_own(spark, tmp_path):
    shown, locations = run_from_a_folder(tmp_path, PROCESSORS, "my_processors.py", "payment_sessions")
    columns = list(shown[0])
    table = spark.read.parquet(locations.output).select(*columns).orderBy("user_id", "session_start")
    assert [
        {**row.asDict(), "session_start": str(row.session_start), "session_end": str(row.session_end)}
        for row in table.collect()
    ] == shown
    report = report_of(locations)
    assert (report["input_rows"], report["used_rows"], report["late_rows_dropped"]) == (4, 4, 0)
