"""A declaration's transform (issue 73): a team's own function from its declarations folder,
run on real availableNow queries, every row accounted (what it drops: filtered), and compared
with what the landed lines say, worked out here by hand. Each test writes its module under a
name of its own: a module stays imported in the test worker's Python."""

from __future__ import annotations

import json
import textwrap
from datetime import datetime
from importlib import resources
from pathlib import Path

import pytest
import yaml

from jobs import declare
from jobs.change import rebuild
from jobs.change.plan import REPROCESS, RESUMES, plan
from jobs.cli import main
from jobs.lake.builds import in_use
from jobs.lake.layout import Locations
from jobs.run.runner import RunFailed, RunRefused, RunRefusedDeclaration
from tests.helpers import event, land_in_order, own_module, run_closed_range, run_pipeline

# Tags each event internal or external (a lookup a team has), and drops the bots' events.
TAG_INTERNAL = """
from pyspark.sql import functions as F

def tag_internal(events):
    team = F.when(F.col("user_id").startswith("staff-"), "internal").otherwise("external")
    return events.withColumn("team", team).where(~F.col("user_id").startswith("bot-"))
"""


def declare_own(folder: Path, monkeypatch, **changes: object) -> declare.PipelineBase:
    """clickstream as a team's own (named team_events) in `folder`, with `changes`, and a suite."""
    shipped = resources.files("jobs") / "pipelines" / "clickstream.yaml"
    raw = {**yaml.safe_load(shipped.read_text()), "name": "team_events", **changes}
    suite = {
        "table": raw["name"],
        "expectations": [{"expect": "compound_columns_to_be_unique", "column_list": "$table_key"}],
    }
    (folder / "pipelines").mkdir(parents=True, exist_ok=True)
    (folder / "expectations").mkdir(parents=True, exist_ok=True)
    (folder / "pipelines" / "team_events.yaml").write_text(yaml.safe_dump(raw))
    (folder / "expectations" / "team_events.yaml").write_text(yaml.safe_dump(suite))
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder / "pipelines"))
    monkeypatch.setenv("JOBS_EXPECTATIONS_DIR", str(folder / "expectations"))
    return declare.from_mapping(raw)


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2023-07-30T{clock}")


def rows(spark, output: str, *columns: str) -> list[tuple]:
    return sorted(tuple(row) for row in spark.read.parquet(output).select(*columns).collect())


def balanced(report) -> tuple[int, int, int, int, int]:
    assert report.rows_balance, report
    return report.input_rows, report.used_rows, report.quarantined_rows, report.filtered_rows, report.late_rows_dropped


def test_a_transform_keys_the_windows_what_it_drops_is_filtered_and_a_failed_run_is_run_again(
    spark, tmp_path, monkeypatch, capsys, caplog
):
    module = own_module(tmp_path / "pipelines", TAG_INTERNAL)
    pipeline = declare_own(
        tmp_path, monkeypatch, transform=f"{module}:tag_internal", where="event <> 'scroll'", keys=["team"]
    )
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    land_in_order(
        locations.landing,
        {
            "a.json": [
                event("staff-1", "2023-07-30T10:00:10Z", "e1"),
                event("alice", "2023-07-30T10:00:20Z", "e2"),
                event("bob", "2023-07-30T10:00:30Z", "e3"),
                event("bot-7", "2023-07-30T10:00:40Z", "e4"),  # dropped by the transform: filtered
                event("carol", "2023-07-30T10:00:50Z", "e5", event="scroll"),  # filtered by `where`
                event("dave", "2023-07-30T10:10:00Z", "e6"),  # moves the watermark to 10:05
                event("erin", "2023-07-30T10:10:10Z", "e7", event="teleport"),  # quarantined (known_event)
            ]
        },
    )
    first = run_pipeline(spark, pipeline, locations)
    assert balanced(first) == (7, 4, 1, 2, 0)

    # A bot's event that is also late is filtered, not late: the transform dropped it first.
    land_in_order(
        locations.landing,
        {
            "b.json": [
                event("bot-8", "2023-07-30T10:01:00Z", "e8"),
                event("frank", "2023-07-30T10:01:30Z", "e9"),  # its window ended at 10:02: late
                event("staff-2", "2023-07-30T10:09:00Z", "e10"),
            ]
        },
    )
    second = run_pipeline(spark, pipeline, locations)
    assert balanced(second) == (3, 1, 0, 1, 1)
    assert rows(spark, locations.output, "window_start", "team", "event_count") == [
        (at("10:00:00"), "external", 2),
        (at("10:00:00"), "internal", 1),
    ]

    # Per landed file, in the file ledger: what the transform dropped is a term of the file's account.
    assert main(["files", pipeline.name, "--root", str(tmp_path / "root"), "--json"]) == 0
    files = {Path(f["path"]).name: f for f in map(json.loads, capsys.readouterr().out.splitlines())}
    assert {
        n: (f["input_rows"], f["used_rows"], f["filtered_rows"], f["late_rows_dropped"]) for n, f in files.items()
    } == {
        "a.json": (7, 4, 2, 0),
        "b.json": (3, 1, 1, 1),
    }

    # The transform fails on a record: the run fails, commits nothing; fixed, the run after it
    # resumes (the change logged) and reads that file once.
    (tmp_path / "pipelines" / f"{module}.py").write_text(
        textwrap.dedent(TAG_INTERNAL).replace(
            "def tag_internal(events):",
            "def tag_internal(events):\n    events = events.where(F.assert_true(F.col('user_id') != 'mallory').isNull())",
        )
    )
    land_in_order(locations.landing, {"c.json": [event("mallory", "2023-07-30T10:20:00Z", "e11")]})
    with pytest.raises(RunFailed):
        run_pipeline(spark, pipeline, locations)
    assert rows(spark, locations.output, "window_start", "team", "event_count")[-1][0] == at("10:00:00")
    (tmp_path / "pipelines" / f"{module}.py").write_text(textwrap.dedent(TAG_INTERNAL) + "\n# fixed\n")
    third = run_pipeline(spark, pipeline, locations)
    assert balanced(third) == (1, 1, 0, 0, 0)
    assert "resumes under a changed transform_source" in caplog.text
    assert rows(spark, locations.output, "window_start", "team", "event_count") == [
        (at("10:00:00"), "external", 2),
        (at("10:00:00"), "internal", 1),
        (at("10:09:00"), "internal", 1),
        (at("10:10:00"), "external", 1),  # dave's: the watermark is at 10:15 now
    ]


def test_a_transform_that_adds_rows_or_shuffles_fails_the_batch_naming_it_and_commits_nothing(
    spark, tmp_path, monkeypatch
):
    module = own_module(
        tmp_path / "pipelines",
        """
        from pyspark.sql import functions as F

        def twice(events):
            return events.withColumn("copy", F.explode(F.array(F.lit(1), F.lit(2)))).drop("copy")
        """,
    )
    pipeline = declare_own(tmp_path, monkeypatch, transform=f"{module}:twice")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    land_in_order(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:10Z", "e1")]})
    with pytest.raises(RunFailed, match=f"transform {module}:twice gave back more records of .*a.json"):
        run_pipeline(spark, pipeline, locations)
    assert not list(Path(locations.output).rglob("*.parquet"))

    # One that moves rows between tasks (a shuffle) is told apart from one that works row by row.
    shuffles = own_module(tmp_path / "pipelines", "def spread(events):\n    return events.repartition(3)\n")
    pipeline = declare_own(tmp_path, monkeypatch, transform=f"{shuffles}:spread")
    with pytest.raises(RunFailed, match=r"works record by record .no aggregate, distinct, sort, repartition"):
        run_pipeline(spark, pipeline, locations)
    assert not list(Path(locations.output).rglob("*.parquet"))


def test_a_transform_is_imported_by_plan_and_a_run_never_by_loading_and_a_broken_one_is_exit_2(
    spark, tmp_path, monkeypatch, capsys
):
    broken = own_module(tmp_path / "pipelines", "raise RuntimeError('half-written')\n")
    pipeline = declare_own(tmp_path, monkeypatch, transform=f"{broken}:tag", keys=["team"])
    root = str(tmp_path / "root")
    assert main(["list"]) == 0  # loading every declaration imports no transform
    assert "team_events" in capsys.readouterr().out
    locations = Locations.resolve(pipeline.name, root=root)
    land_in_order(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:10Z", "e1")]})
    assert main(["plan", pipeline.name, "--root", root]) == 2
    assert f"module {broken!r} does not import (RuntimeError: half-written)" in capsys.readouterr().err
    with pytest.raises(RunRefusedDeclaration, match="half-written"):
        run_pipeline(spark, pipeline, locations)

    # One that drops the product's columns, or reads a key nobody made: refused, named.
    drops = own_module(tmp_path / "pipelines", "def mine(events):\n    return events.select('user_id', 'event_time')\n")
    pipeline = declare_own(tmp_path, monkeypatch, transform=f"{drops}:mine")
    assert main(["plan", pipeline.name, "--root", root]) == 2
    assert "must keep the product's columns as they were; it dropped or changed ['_jobs_" in capsys.readouterr().err
    pipeline = declare_own(tmp_path, monkeypatch, transform=f"{drops}:nothing_here")
    assert main(["plan", pipeline.name, "--root", root]) == 2
    assert "has no function 'nothing_here'" in capsys.readouterr().err
    keeps = own_module(tmp_path / "pipelines", "def mine(events):\n    return events\n")
    pipeline = declare_own(tmp_path, monkeypatch, transform=f"{keeps}:mine", keys=["team"])
    assert main(["plan", pipeline.name, "--root", root]) == 2
    assert f"after transform '{keeps}:mine', Spark cannot make the table" in capsys.readouterr().err
    assert not (Path(locations.checkpoint) / "offsets").exists()  # no batch was planned


def test_a_transform_in_a_backfill_and_a_rebuild_when_it_changes_the_table(spark, tmp_path, monkeypatch):
    module = own_module(tmp_path / "pipelines", TAG_INTERNAL)
    pipeline = declare_own(tmp_path, monkeypatch, transform=f"{module}:tag_internal", keys=["team"])
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    land_in_order(
        locations.landing,
        {
            "a.json": [event("staff-1", "2023-07-30T10:00:10Z", "e1"), event("bot-1", "2023-07-30T10:00:20Z", "e2")],
            "b.json": [event("alice", "2023-07-30T10:01:10Z", "e3"), event("zed", "2023-07-30T10:10:00Z", "e4")],
        },
    )
    # A backfill's range on a root of its own: closed, every window written.
    scratch = Locations.resolve(pipeline.name, root=str(tmp_path / "scratch"), landing=locations.landing)
    ranged = run_closed_range(spark, pipeline, scratch)
    assert ranged.rows_balance
    assert rows(spark, scratch.output, "window_start", "team", "event_count") == [
        (at("10:00:00"), "internal", 1),
        (at("10:01:00"), "external", 1),
        (at("10:10:00"), "external", 1),
    ]

    first = run_pipeline(spark, pipeline, locations)
    assert balanced(first) == (4, 3, 0, 1, 0)
    # The transform now makes `team` a number: the table would hold other columns.
    (tmp_path / "pipelines" / f"{module}.py").write_text(
        textwrap.dedent(TAG_INTERNAL).replace('"internal").otherwise("external")', "1).otherwise(0)")
    )
    planned = plan(spark, pipeline, locations)
    assert planned.verdict == REPROCESS
    assert planned.changes == [
        f"transform '{module}:tag_internal' ({module}.py sha256:{planned.changes[0].split('sha256:')[1][:16]}) "
        "makes a table of other columns: team string -> int"
    ]
    land_in_order(locations.landing, {"c.json": [event("staff-3", "2023-07-30T10:20:00Z", "e5")]})
    with pytest.raises(RunRefused, match=f"transform '{module}:tag_internal'.*team string -> int.*rebuild team_events"):
        run_pipeline(spark, pipeline, locations)
    root = str(tmp_path / "root")
    rebuild.rebuild(spark, pipeline, root, "numbered")
    built = in_use(pipeline.name, root)
    assert plan(spark, pipeline, built).verdict == RESUMES
    assert rows(spark, built.output, "window_start", "team", "event_count") == [
        (at("10:00:00"), 1, 1),
        (at("10:01:00"), 0, 1),
        (at("10:10:00"), 0, 1),  # closed by c.json's event, which the rebuild read too
    ]


def test_a_transform_on_a_joins_own_source_adds_a_column_and_drops_rows_counted_as_filtered(
    spark, tmp_path, monkeypatch
):
    module = own_module(
        tmp_path / "pipelines",
        """
        from pyspark.sql import functions as F

        def campaign(impressions):
            kept = impressions.where(F.col("impression_id") != "i-test")
            return kept.withColumn("campaign", F.split("ad_id", "-").getItem(1))
        """,
    )
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(tmp_path / "pipelines"))
    raw = yaml.safe_load((resources.files("jobs") / "pipelines" / "ad_clicks.yaml").read_text())
    pipeline = declare.from_mapping({**raw, "name": "team_clicks", "transform": f"{module}:campaign"})
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))

    def shown(**fields: str) -> str:
        return json.dumps(fields)

    land_in_order(
        f"{locations.landing}/impressions",
        {
            "i.json": [
                shown(impression_id="i1", ad_id="ad-spring", impression_time="2023-07-30T10:00:00Z"),
                shown(impression_id="i-test", ad_id="ad-spring", impression_time="2023-07-30T10:00:01Z"),
            ]
        },
    )
    land_in_order(
        f"{locations.landing}/clicks",
        {"c.json": [shown(click_id="c1", ad_id="ad-spring", click_time="2023-07-30T10:05:00Z")]},
    )
    report = run_pipeline(spark, pipeline, locations)
    assert balanced(report) == (3, 2, 0, 1, 0)
    assert rows(spark, locations.output, "impression_id", "click_id", "campaign") == [("i1", "c1", "spring")]
