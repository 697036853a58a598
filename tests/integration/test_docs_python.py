"""docs/python.md's worked example runs as the page says, as a team runs it: its module,
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


def test_the_worked_example_runs_from_a_folder_of_its_own(spark, tmp_path):
    (module,) = re.findall(r"```python\n(.*?)```", WORKED, re.S)
    declaration, suite = re.findall(r"```yaml\n(.*?)```", WORKED, re.S)
    landed, written = re.findall(r"```json\n(.*?)```", WORKED, re.S)
    team = tmp_path / "team"
    for folder, name, text in (
        ("pipelines", "site_rules.py", module),
        ("pipelines", "page_views.yaml", declaration),
        ("expectations", "page_views.yaml", suite),
    ):
        (team / folder).mkdir(parents=True, exist_ok=True)
        (team / folder / name).write_text(text)
    root = tmp_path / "root"
    land_in_order(str(root / "landing" / "page_views"), {"views.json": landed.splitlines()})
    env = {
        **os.environ,
        "JOBS_PIPELINES_DIR": str(team / "pipelines"),
        "JOBS_EXPECTATIONS_DIR": str(team / "expectations"),
    }
    ran = subprocess.run(
        python_cmd("run", "page_views", "--root", str(root)), cwd=team, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]

    shown = [json.loads(row) for row in written.splitlines()]
    columns = list(shown[0])
    locations = Locations.resolve("page_views", root=str(root))
    table = [row.asDict() for row in spark.read.parquet(locations.output).select(*columns).collect()]
    assert sorted(table, key=lambda r: r["event_id"]) == shown
    (report,) = (json.loads(p.read_text()) for p in Path(locations.runs).glob("*Z-??????.json"))
    assert (report["input_rows"], report["used_rows"], report["filtered_rows"]) == (5, 3, 2)
    assert report["status"] == "succeeded" and not report["not_validated"]
