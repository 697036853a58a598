"""Pipelines that read pipelines over real data (issue 74): three hours of GH Archive events
(../shared/corpus/) through a chain of three Delta tables, each reading the one above:

    gh_events        every usable event, as the code host's events API sends it (events)
    push_events      its push events, with computed columns (an owner, a commit count)
    pushes_per_hour  pushes and commits per repository in 1-hour windows

One hour lands per run, into its day's dt= folder; the middle level is killed mid-batch in
the second run (a data file written, not committed) and run again. After each run the bottom
table equals a model written here without the product's code (tests/model.py: each line read
as the top's declaration says, push events kept, Spark's watermark and append mode); then a
backfill of the day at the top with --with-downstream replaces it at every level, and the
bottom table equals the model again. The rows of each level and the time from landing to
the bottom table are printed (`pytest -s`): the closing note's figures."""

from __future__ import annotations

import gzip
import json
import shutil
import time
from datetime import UTC, timedelta
from pathlib import Path

import pytest
import yaml

from jobs.cli import main
from jobs.lake import delta
from jobs.lake.builds import in_use
from jobs.run.report import load_reports
from tests.e2e.test_table_crash import crash_mid_batch, finish, start
from tests.helpers import land_in_order, run_pipeline
from tests.integration.test_graph_changes import with_suites
from tests.model import Reading, WindowModel, github_reading, record

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "gharchive_2015-01-01" / "gz"
HOURS = ["2015-01-01-0.json.gz", "2015-01-01-1.json.gz", "2015-01-01-15.json.gz"]  # one a run, in this order
ACTIVITY = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "jobs" / "pipelines" / "github_activity.yaml").read_text()
)
TOP = {
    "name": "gh_events",
    "source": ACTIVITY["source"],  # tests/model.py github_reading reads a line as it says
    "output": {"format": "delta", "partition_by": "event_date"},
}
MIDDLE = {
    "name": "push_events",
    "source": {"table": "gh_events"},
    "columns": {"owner": "lower(split(repo.name, '/')[0])", "commits": "coalesce(payload.size, 0)"},
    "where": "type = 'PushEvent'",
    "output": {"format": "delta", "partition_by": "event_date"},
}
BOTTOM = {
    "name": "pushes_per_hour",
    "source": {"table": "push_events"},
    "watermark": "10 minutes",
    "window": {"duration": "1 hour"},
    "keys": ["repo.name"],
    "aggregates": [
        {"name": "pushes", "function": "count"},
        {"name": "commits", "function": "sum", "column": "commits"},
    ],
    "output": {"format": "delta", "partition_by": "window_date"},
}


def push_reading(line: str) -> Reading | None:
    """A push event the top keeps, keyed by its repository, with its commits (none: 0)."""
    found = github_reading(line)
    if found is None or record(line).get("type") != "PushEvent":
        return None
    return Reading(found.moment, (found.key[1],), found.value or 0)


def bottom_rows(spark, output: str) -> list[tuple]:
    rows = spark.read.format("delta").load(output).collect()
    utc = [(r.window_start.replace(tzinfo=UTC), r.window_end.replace(tzinfo=UTC)) for r in rows]
    return sorted((*bounds, r.repo_name, r.pushes, int(r.commits)) for bounds, r in zip(utc, rows, strict=True))


@pytest.mark.skipif(not CORPUS.exists(), reason="the GH Archive sample is not on this machine")
def test_a_three_level_chain_over_gh_archive_equals_the_model_through_a_crash_and_a_backfill(
    spark, tmp_path, monkeypatch
):
    root = tmp_path / "chain"
    folder = root / "pipelines"
    folder.mkdir(parents=True)
    for raw in (TOP, MIDDLE, BOTTOM):
        (folder / f"{raw['name']}.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder))
    with_suites(
        root / "expectations", monkeypatch, {"gh_events": "id", "push_events": "id", "pushes_per_hour": "repo_name"}
    )
    from jobs import declare

    pipelines = declare.load_all(folder)
    chain = [(pipelines[name], in_use(name, str(root), pipelines[name].source.table)) for name in pipelines]
    chain.sort(key=lambda level: [TOP["name"], MIDDLE["name"], BOTTOM["name"]].index(level[0].name))
    (top, top_at), (middle, middle_at), (bottom, bottom_at) = chain
    model = WindowModel(
        read=push_reading,
        finish=lambda commits: (len(commits), sum(commits)),
        delay=timedelta(minutes=10),
        window=timedelta(hours=1),
    )
    day = Path(top_at.landing) / "dt=2015-01-01"
    day.mkdir(parents=True)
    for number, hour in enumerate(HOURS):
        began = time.monotonic()
        shutil.copy(CORPUS / hour, day / hour)
        up = run_pipeline(spark, top, top_at)
        if number == 1:  # the middle killed with a batch written, not committed; then run again
            crash_mid_batch(root, middle.name)
        finish(start(root, middle.name))
        down = run_pipeline(spark, bottom, bottom_at)
        cascade_s = time.monotonic() - began
        mid = max(load_reports(middle_at.runs), key=lambda r: r.started_at)
        with gzip.open(CORPUS / hour, "rt", encoding="utf-8") as lines:
            model.run([[line for line in lines if push_reading(line)]])
        assert up.rows_balance and mid.rows_balance and down.rows_balance
        assert mid.input_rows == up.used_rows and down.input_rows == mid.used_rows, (up, mid, down)
        assert bottom_rows(spark, bottom_at.output) == model.rows()
        print(
            f"\nrun {number + 1} ({hour}): {top.name} {up.input_rows} in, {up.used_rows} used, "
            f"{up.quarantined_rows} quarantined; {middle.name} {mid.input_rows} in, {mid.used_rows} pushes, "
            f"{mid.filtered_rows} filtered, read of versions {mid.upstream_batches}; {bottom.name} "
            f"{down.input_rows} in, {down.output_rows} windows written; landing to bottom {cascade_s:.1f} s"
        )

    # A push of the next day moves every watermark past the day: its windows are final, so a
    # backfill may replace the day in each table (one never replaces windows a run still holds).
    with gzip.open(CORPUS / HOURS[0], "rt", encoding="utf-8") as lines:
        push = json.loads(next(line for line in lines if push_reading(line)))
    next_day = [json.dumps({**push, "id": "next-day", "created_at": "2015-01-02T01:30:00Z"})]
    land_in_order(top_at.landing, {"dt=2015-01-02/next.json": next_day})
    run_pipeline(spark, top, top_at)
    for pipeline, where in chain[1:]:
        run_pipeline(spark, pipeline, where)
    model.run([next_day])
    assert bottom_rows(spark, bottom_at.output) == model.rows()

    # The day again, at every level, each replaced in one commit; the bottom equals the model again.
    began = time.monotonic()
    assert main(["backfill", top.name, "--root", str(root), "--since", "2015-01-01", "--until", "2015-01-01",
                 "--id", "day", "--with-downstream"]) == 0  # fmt: skip
    print(f"\nbackfill of 2015-01-01 with --with-downstream: {time.monotonic() - began:.1f} s")
    for _, where in chain:
        assert [v for v in delta.versions(where.output) if delta.said(where.output, v).get("backfill") == "day"]
    assert bottom_rows(spark, bottom_at.output) == model.rows()
    after = [run_pipeline(spark, pipeline, where) for pipeline, where in chain[1:]]
    assert [(r.input_rows, r.owed) for r in after] == [(0, []), (0, [])]
    assert bottom_rows(spark, bottom_at.output) == model.rows()
