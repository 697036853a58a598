"""A declaration's expressions (issue 72): computed columns, `where`, keys and aggregates over
them, run on real availableNow queries and compared with what the landed lines say, worked
out here by hand."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import yaml

from jobs import declare
from jobs.change.plan import REPROCESS, RESUMES, plan
from jobs.cli import main
from jobs.declare.load import pipelines_dir
from jobs.lake.layout import Locations
from jobs.quality_report import page
from tests.helpers import event, land_in_order, run_pipeline


def declaration(**changes: object) -> dict:
    """The shipped clickstream declaration, named active_users, with `changes`."""
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    return {**raw, "name": "active_users", **changes}


def declared(**changes: object) -> declare.PipelineBase:
    return declare.from_mapping(declaration(**changes))


def declare_own(folder: Path, monkeypatch, raw: dict) -> None:
    """The declaration `raw` in a pipelines folder of one's own, with a suite of its own, as a
    team declares one (JOBS_PIPELINES_DIR, JOBS_EXPECTATIONS_DIR)."""
    suite = {
        "table": raw["name"],
        "expectations": [{"expect": "compound_columns_to_be_unique", "column_list": "$table_key"}],
    }
    for kind, text in (("pipelines", yaml.safe_dump(raw)), ("expectations", yaml.safe_dump(suite))):
        (folder / kind).mkdir(parents=True, exist_ok=True)
        (folder / kind / f"{raw['name']}.yaml").write_text(text)
        monkeypatch.setenv(f"JOBS_{kind.upper()}_DIR", str(folder / kind))


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2023-07-30T{clock}")  # as Spark gives it back: the session's zone is UTC


def rows(spark, output: str, *columns: str) -> list[tuple]:
    return sorted(tuple(row) for row in spark.read.parquet(output).select(*columns).collect())


def test_where_filters_rows_counted_as_filtered_and_the_watermark_follows_them(spark, tmp_path, monkeypatch, capsys):
    raw = declaration(
        columns={"user": "lower(user_id)", "id_length": "length(event_id)"},
        where="event <> 'scroll'",
        keys=["user"],
        aggregates=[
            {"name": "events", "function": "count"},
            {"name": "ids", "function": "approx_count_distinct", "column": "event_id"},
            {"name": "longest_id", "expression": "max(id_length)"},
        ],
    )
    pipeline = declare.from_mapping(raw)
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    land_in_order(
        locations.landing,
        {
            "a.json": [
                event("U1", "2023-07-30T10:00:10Z", "e1"),
                event("u1", "2023-07-30T10:00:20Z", "e22", event="view"),
                # Filtered, yet the watermark sees it: 10:10 - 5 minutes = 10:05.
                event("u2", "2023-07-30T10:10:00Z", "e3", event="scroll"),
            ]
        },
    )
    first = run_pipeline(spark, pipeline, locations)
    assert (first.input_rows, first.used_rows, first.filtered_rows, first.late_rows_dropped) == (3, 2, 1, 0)
    assert first.rows_balance

    land_in_order(
        locations.landing,
        {
            "b.json": [
                event("u3", "2023-07-30T10:01:00Z", "e4"),  # its window ended at 10:02, before 10:05: late
                event("u4", "2023-07-30T10:09:00Z", "e5"),  # its window is still open
            ]
        },
    )
    second = run_pipeline(spark, pipeline, locations)
    assert (second.input_rows, second.used_rows, second.filtered_rows, second.late_rows_dropped) == (2, 1, 0, 1)
    assert second.rows_balance
    written = rows(spark, locations.output, "window_start", "window_end", "user", "events", "ids", "longest_id")
    assert written == [(at("10:00:00"), at("10:01:00"), "u1", 2, 2, 3)]

    # Per landed file, in the file ledger (`files`): a filtered row is a term of the file's account.
    declare_own(tmp_path, monkeypatch, raw)
    root = str(tmp_path / "root")
    assert main(["files", pipeline.name, "--root", root, "--json"]) == 0
    files = {Path(f["path"]).name: f for f in map(json.loads, capsys.readouterr().out.splitlines())}
    assert {
        name: (f["input_rows"], f["used_rows"], f["filtered_rows"], f["late_rows_dropped"]) for name, f in files.items()
    } == {
        "a.json": (3, 2, 1, 0),
        "b.json": (2, 1, 0, 1),
    }
    assert main(["files", pipeline.name, "--root", root]) == 0
    assert "filtered" in capsys.readouterr().out.splitlines()[0].split()

    # In the report's run table and chart: the first run's bar is a third filtered.
    html = Path(page.build(root, with_data_docs=False)).read_text()
    assert f"{first.run_id} ({first.started_at}): 1 of 3 input rows filtered (33.3%)" in html
    assert re.search(rf'data-run="{first.run_id}">.*?<td class="filtered">1</td>', html)


def test_an_expression_of_the_wrong_type_is_refused_at_plan_and_before_a_run_reads_a_row(
    spark, tmp_path, monkeypatch, capsys
):
    raw = declaration(columns={"user": "lower(user_id)"}, keys=["user"], where="length(event_id)")
    declare_own(tmp_path, monkeypatch, raw)
    locations = Locations.resolve(raw["name"], root=str(tmp_path / "root"))
    land_in_order(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:10Z")]})
    root = str(tmp_path / "root")

    for command in (["plan"], ["run", "--no-validate"]):
        assert main([command[0], raw["name"], "--root", root, *command[1:]]) == 2, command
        assert "where 'length(event_id)' gives int values, not true or false" in capsys.readouterr().err
    assert not Path(locations.checkpoint, "offsets").exists()  # no batch was planned
    assert not Path(locations.output).exists()


def test_the_plan_resumes_across_a_where_and_names_a_changed_key_expression(spark, tmp_path, caplog):
    raw = declaration(columns={"user": "lower(user_id)", "shout": "upper(event)"}, keys=["user"], where="event <> 'x'")
    locations = Locations.resolve(raw["name"], root=str(tmp_path / "root"))
    land_in_order(locations.landing, {"a.json": [event("U1", "2023-07-30T10:00:10Z")]})
    run_pipeline(spark, declare.from_mapping(raw), locations)

    # A `where` and a column nothing held reads: Spark resumes; the plan and the run say what changed.
    outlived = declaration(
        **{**raw, "columns": {"user": "lower(user_id)", "shout": "lower(event)"}, "where": "event <> 'y'"}
    )
    found = plan(spark, declare.from_mapping(outlived), locations)
    assert (found.verdict, found.changes) == (RESUMES, [])
    assert found.outlived == [
        "column 'shout': 'upper(event)' -> 'lower(event)'",
        "where: \"event <> 'x'\" -> \"event <> 'y'\"",
    ]
    assert "  changes the checkpoint outlives (the rows read before keep what they were given):" in found.lines()
    land_in_order(locations.landing, {"b.json": [event("u2", "2023-07-30T10:00:20Z")]})
    with caplog.at_level("INFO"):
        assert run_pipeline(spark, declare.from_mapping(outlived), locations).status == "succeeded"
    assert "resumes under a changed where: \"event <> 'x'\" -> \"event <> 'y'\"" in caplog.text
    assert plan(spark, declare.from_mapping(outlived), locations).outlived == []  # recorded by the run

    # A key's expression: what the state holds changes, so the plan names it and asks for a rebuild.
    rekeyed = declaration(**{**outlived, "columns": {"user": "upper(user_id)", "shout": "lower(event)"}})
    found = plan(spark, declare.from_mapping(rekeyed), locations)
    assert found.verdict == REPROCESS
    assert found.changes == ["computed: user lower(user_id) -> upper(user_id)"]


def test_expressions_run_in_the_jvm_with_no_python_worker(spark):
    """Computed columns, a where, keys and aggregates over them are Spark SQL: the query's
    plan holds no Python function (a Python worker per task would cost every batch)."""
    from jobs.columns import LINE, SOURCE_FILE
    from jobs.flow.query import pipeline_table
    from jobs.flow.sink import empty_frame

    pipeline = declared(
        columns={"user": "lower(user_id)", "id_length": "length(event_id)"},
        where="event <> 'scroll'",
        keys=["user"],
        aggregates=[
            {"name": "ids", "function": "approx_count_distinct", "column": "event_id"},
            {"name": "p90", "expression": "percentile_approx(id_length, 0.9)"},
        ],
    )
    lines = empty_frame(spark, f"{LINE} string, {SOURCE_FILE} string")
    planned = pipeline_table(pipeline, [lines])._jdf.queryExecution().executedPlan().toString()
    assert "HashAggregate" in planned or "ObjectHashAggregate" in planned  # the plan is the one read
    assert not re.search(r"PythonUDF|EvalPython|ArrowEvalPython|pythonUDF", planned)


def _shipped(name: str, **changes: object) -> declare.PipelineBase:
    raw = yaml.safe_load((pipelines_dir() / f"{name}.yaml").read_text())
    return declare.from_mapping({**raw, **changes})


def test_each_side_of_a_join_computes_and_filters_its_own_events_before_the_join(spark, tmp_path):
    raw = yaml.safe_load((pipelines_dir() / "ad_clicks.yaml").read_text())
    raw["columns"] = {"campaign": "upper(split(ad_id, '-')[1])"}
    raw["where"] = "impression_id <> 'i2'"
    raw["join"] |= {"columns": {"click_second": "second(click_time)"}, "where": "click_id <> 'c2'"}
    pipeline = declare.from_mapping(raw)
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    impressions = [
        {"impression_id": "i1", "ad_id": "ad-x", "impression_time": "2023-07-30T10:00:00Z"},
        {"impression_id": "i2", "ad_id": "ad-x", "impression_time": "2023-07-30T10:00:30Z"},  # filtered
    ]
    clicks = [
        {"click_id": "c1", "ad_id": "ad-x", "click_time": "2023-07-30T10:05:07Z"},
        {"click_id": "c2", "ad_id": "ad-x", "click_time": "2023-07-30T10:06:00Z"},  # filtered
    ]
    land_in_order(f"{locations.landing}/impressions", {"i.json": [json.dumps(i) for i in impressions]})
    land_in_order(f"{locations.landing}/clicks", {"c.json": [json.dumps(c) for c in clicks]})
    report = run_pipeline(spark, pipeline, locations)

    assert (report.input_rows, report.filtered_rows, report.used_rows) == (4, 2, 2) and report.rows_balance
    joined = spark.read.format("delta").load(locations.output)
    assert sorted(
        tuple(r) for r in joined.select("impression_id", "click_id", "campaign", "click_second").collect()
    ) == [("i1", "c1", "X", 7)]


def test_a_processor_gets_the_computed_key_and_only_the_rows_where_keeps(spark, tmp_path):
    pipeline = _shipped("spending_sessions", columns={"user": "lower(userId)"}, keys=["user"], where="amount < 1000")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    spends = [("u1", "10:00", 10.0), ("U1", "10:10", 20.0), ("u1", "10:20", 5000.0), ("u2", "12:30", 1.0)]
    lines = [
        json.dumps({"userId": u, "transactionId": f"t{i}", "transactionTime": f"2023-07-30T{t}:00Z", "amount": a})
        for i, (u, t, a) in enumerate(spends)
    ]
    land_in_order(locations.landing, {"s.json": lines})
    report = run_pipeline(spark, pipeline, locations)

    assert (report.input_rows, report.filtered_rows, report.used_rows) == (4, 1, 3) and report.rows_balance
    # The watermark (12:20) passed u1's session (last at 10:10, a 1-hour gap); the 5000 spent was filtered.
    written = rows(spark, locations.output, "user", "total_amount", "transactions")
    assert written == [("u1", 30.0, 2)]
