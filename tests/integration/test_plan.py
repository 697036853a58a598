"""`python -m jobs plan`: what a declaration, as it is now, means against the checkpoint and
table its pipeline has. Expected figures come from the files the tests land (their sizes
on disk) and from the columns each pattern is documented to write, not from the plan."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from jobs import declare
from jobs.change.plan import NEW, REPROCESS, RESUMES, plan
from jobs.declare.computing import Aggregate, Window
from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations
from jobs.run.runner import RunRefused
from tests.helpers import declaration_copy, event, land, python_cmd, run_pipeline

FILES = {
    "a.json": [event("u1", "2023-07-30T10:00:20Z"), event("u1", "2023-07-30T10:09:20Z")],
    "b.json": [event("u2", "2023-07-30T10:20:00Z")],
    "c.json": [event("u3", "2023-07-30T10:30:00Z"), event("u3", "2023-07-30T10:31:00Z")],
}
# clickstream's table, as docs/pipelines.md describes it: the window, the key, the count, and
# the window's date as the partition folder.
CLICKSTREAM_COLUMNS = {
    "window_start": "timestamp",
    "window_end": "timestamp",
    "user_id": "string",
    "event_count": "bigint",
    "window_date": "date",
}


def sizes(landing: str) -> dict[str, int]:
    return {path.name: path.stat().st_size for path in Path(landing).rglob("*.json")}


@pytest.fixture(params=["parquet", "delta"])
def pipeline(request, clickstream) -> declare.PipelineBase:
    output = clickstream.output.model_copy(update={"format": request.param})
    return clickstream.model_copy(update={"output": output})


def test_a_new_pipeline_and_an_unchanged_one(spark, pipeline, root):
    locations = Locations.resolve(pipeline.name, root=str(root))
    land(locations.landing, FILES)
    landed = sizes(locations.landing)

    first = plan(spark, pipeline, locations)
    assert first.verdict == NEW and first.changes == [] and first.schema_before is None
    assert first.schema_after == CLICKSTREAM_COLUMNS
    assert (first.reads.files, first.reads.bytes) == (3, sum(landed.values()))

    assert run_pipeline(spark, pipeline, locations).status == "succeeded"
    again = plan(spark, pipeline, locations)
    assert again.verdict == RESUMES and again.changes == [] and again.lost == []
    assert again.schema_before == again.schema_after == CLICKSTREAM_COLUMNS  # read from the table itself
    assert again.schema_changes() == []
    assert (again.landed.files, again.landed.bytes, again.archived.files) == (3, sum(landed.values()), 0)


def test_a_change_the_checkpoint_cannot_outlive_names_each_part_and_what_a_reprocessing_reads(spark, pipeline, root):
    locations = Locations.resolve(pipeline.name, root=str(root))
    land(locations.landing, FILES)
    assert run_pipeline(spark, pipeline, locations).status == "succeeded"
    landed = sizes(locations.landing)
    # Retention archived a.json; b.json is gone (deleted), c.json is still landed.
    archived = Path(locations.archive) / "a.json"
    archived.parent.mkdir(parents=True)
    shutil.move(Path(locations.landing) / "a.json", archived)
    os.remove(Path(locations.landing) / "b.json")
    land(locations.landing, {"d.json": [event("u4", "2023-07-30T10:40:00Z")]})  # landed, not read yet
    landed |= sizes(locations.landing)
    changed = pipeline.model_copy(
        update={
            "window": Window(duration_s="300 seconds", slide_s="300 seconds"),
            "aggregates": (*pipeline.aggregates, Aggregate(name="last_user", function="max", column="user_id")),
        }
    )

    found = plan(spark, changed, locations)

    assert found.verdict == REPROCESS
    assert found.changes == [
        'aggregates: added {"column": "user_id", "function": "max", "name": "last_user"}',
        "window_duration_s: 60 -> 300",
        "window_slide_s: 60 -> 300",
    ]
    assert found.schema_before == CLICKSTREAM_COLUMNS
    assert found.schema_changes() == ["+ last_user string"]
    assert (found.landed.files, found.landed.bytes) == (2, landed["c.json"] + landed["d.json"])
    assert (found.archived.files, found.archived.bytes) == (1, landed["a.json"])
    assert found.lost == [str(Path(locations.landing) / "b.json")]
    # A run of the changed declaration is refused with the same changes, and points at the plan.
    with pytest.raises(RunRefused) as refused:
        run_pipeline(spark, changed, locations)
    assert "window_duration_s: 60 -> 300" in str(refused.value) and "python -m jobs plan clickstream" in str(
        refused.value
    )


def test_the_command_prints_the_plan_and_exits_3_when_the_checkpoint_cannot_resume(spark, clickstream, root, tmp_path):
    locations = Locations.resolve(clickstream.name, root=str(root))
    land(locations.landing, FILES)
    assert run_pipeline(spark, clickstream, locations).status == "succeeded"
    folder = declaration_copy(tmp_path / "pipelines", "clickstream", window={"duration": "2 minutes"})
    env = os.environ | {"JOBS_PIPELINES_DIR": str(folder)}

    done = subprocess.run(
        python_cmd("plan", "clickstream", "--root", str(root), "--json"), env=env, capture_output=True, text=True
    )

    assert done.returncode == ExitCode.REFUSED, done.stderr
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    assert printed["verdict"] == REPROCESS and "window_duration_s: 60 -> 120" in printed["changes"]
    assert printed["reads"] == {"files": 3, "bytes": sum(sizes(locations.landing).values())}
    shown = subprocess.run(python_cmd("plan", "clickstream", "--root", str(root)), capture_output=True, text=True)
    assert shown.returncode == ExitCode.OK, shown.stderr
    assert "clickstream: resumes" in shown.stdout and "reprocessing would read 3 files" in shown.stdout
