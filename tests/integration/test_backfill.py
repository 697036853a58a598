"""Backfills over a closed range: every window of the range, the last ones included,
reprocessed into an isolated location and published at once."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from jobs import backfill, declare
from jobs.backfill.stage import Staged, close_range, stage_closed_range
from jobs.flow.patterns import pattern_of
from jobs.lake.layout import Locations
from jobs.validate.validation import validate_table
from tests.helpers import event, land, land_in_order, run_closed_range, run_pipeline, table_rows
from tests.model import ClickstreamModel

T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def landed_days() -> dict[str, dict[str, list[str]]]:
    """Three landing days; each file's events span a few minutes, one is late, one
    unusable, and one breaks the rule known_event."""
    days = {}
    for day in range(3):
        base = day * 24 * 60
        days[f"dt=2023-07-{30 + day:02d}" if day < 2 else "dt=2023-08-01"] = {
            f"part-{day}-{i}.json": [event(f"u{j % 3}", at(base + 3 * i + j * 0.4)) for j in range(7)]
            + [event("late", at(base + 3 * i - 20)), "{unusable", event("u1", at(base + 3 * i + 1.1), event="clik")]
            for i in range(3)
        }
    return days


def plan_rules():
    return declare.load("clickstream").rules


def land_days(root: Path) -> dict[str, dict[str, list[str]]]:
    days = landed_days()
    for folder, files in days.items():
        land_in_order(str(root / "landing" / "clickstream" / folder), files)
    return days


def plan_for(root: Path, **params) -> backfill.BackfillRequest:
    return backfill.backfill_request(
        {"pipeline": "clickstream", **params}, root=str(root), allowed_roots=[str(root)], backfill_id="bf-1"
    )


def run_backfill(spark, request: backfill.BackfillRequest) -> Staged:
    spec = declare.load(request.pipeline)
    options = {"landing_glob": request.landing_glob, "max_files_per_trigger": request.max_files_per_trigger}
    options["mode"] = "range-backfill"  # as jobs/backfill/stage.py runs it: not the landing's incremental reader
    if request.since:
        options.update(landing_since=date.fromisoformat(request.since), landing_until=date.fromisoformat(request.until))
    run_closed_range(spark, spec, request.locations, **options)
    return stage_closed_range(spark, spec, request.locations, request.stage)


def published_rows(spark, publish_to: str) -> list[tuple]:
    return table_rows(spark, backfill.current_version(publish_to))


def test_a_date_range_backfill_publishes_every_window_of_the_range(spark, tmp_path):
    days = land_days(tmp_path)
    request = plan_for(tmp_path, since="2023-07-30", until="2023-07-31")
    summary = run_backfill(spark, request)

    # One availableNow batch over both days' files: nothing is late within one batch.
    model = ClickstreamModel()
    result = model.run([[line for folder in ("dt=2023-07-30", "dt=2023-07-31") for line in _lines(days[folder])]])
    expected = model.closed_range_rows()
    # The backfill applies the pipeline's row rules, as a scheduled run does.
    assert summary.rule_violations == {rule.name: result.violations.get(rule.name, 0) for rule in plan_rules()}
    assert result.violations == {"known_event": 6}
    assert len(expected) > len(model.rows()), "the range must end with windows still held in state"

    validation = validate_table(
        spark,
        declare.load("clickstream"),
        Locations.resolve("clickstream", root=request.work_root, output=request.stage),
    )
    assert validation.status in ("passed", "warned"), validation.summary()
    pointer = backfill.publish(request)

    assert published_rows(spark, request.publish_to) == expected
    assert pointer.pointer.about["rows"] == summary.rows == len(expected)
    assert summary.held_rows == len(model.state) and summary.emitted_rows == len(model.rows())
    assert summary.last_window == max(r[1] for r in expected).strftime("%Y-%m-%dT%H:%M:%SZ")
    # The production checkpoint and table were never created; only the work root and the publish location were.
    assert not (tmp_path / "checkpoints").exists() and not (tmp_path / "tables").exists()
    assert {p.name for p in tmp_path.iterdir()} == {"landing", "backfills", "published"}


def test_prefixes_with_rate_limits_follow_the_watermark_and_still_close_the_range(spark, tmp_path):
    days = land_days(tmp_path)
    prefixes = ["dt=2023-07-31", "dt=2023-08-01"]
    request = plan_for(tmp_path, prefixes=prefixes, max_files_per_trigger=1)
    run_backfill(spark, request)
    model = ClickstreamModel()
    result = model.run([lines for folder in prefixes for lines in days[folder].values()])
    assert result.late_rows_dropped > 0, "one batch per file: the late rows of later files are dropped"
    assert published_after(spark, request) == model.closed_range_rows()


def published_after(spark, request: backfill.BackfillRequest) -> list[tuple]:
    backfill.publish(request)
    return published_rows(spark, request.publish_to)


def test_nested_prefixes_select_only_their_files(spark, tmp_path):
    landing = tmp_path / "landing" / "clickstream"
    land(str(landing / "dt=2023-07-30" / "hour=10"), {"a.json": [event("u1", at(0)), event("u1", at(0.5))]})
    land(str(landing / "dt=2023-07-30" / "hour=11"), {"b.json": [event("u2", at(60))]})
    land(str(landing / "dt=2023-07-31" / "hour=10"), {"c.json": [event("u3", at(24 * 60))]})
    request = plan_for(tmp_path, prefixes=["dt=2023-07-30/hour=10", "dt=2023-07-31/hour=10"])
    summary = run_backfill(spark, request)
    assert summary.input_files == 2
    start0, start1 = T0, T0 + timedelta(days=1)
    assert published_after(spark, request) == [
        (start0, start0 + timedelta(minutes=1), "u1", 2),
        (start1, start1 + timedelta(minutes=1), "u3", 1),
    ]


def test_publishing_switches_versions_at_once_and_keeps_the_previous_one(spark, tmp_path):
    land_days(tmp_path)
    ids = ["20230801T000000Z-a", "20230802T000000Z-b", "20230803T000000Z-c"]
    for backfill_id in ids:
        request = backfill.backfill_request(
            {"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-30"},
            root=str(tmp_path),
            allowed_roots=[str(tmp_path)],
            backfill_id=backfill_id,
        )
        run_backfill(spark, request)
        # Staged but not published: readers still see the previous version.
        before = None if backfill_id == ids[0] else backfill.current_version(request.publish_to)
        assert before != request.stage
        backfill.publish(request)
        assert backfill.current_version(request.publish_to) == request.stage
    versions = sorted(p.name for p in (Path(request.publish_to) / backfill.VERSIONS).iterdir())
    assert versions == ids[1:]
    pointer = json.loads((Path(request.publish_to) / backfill.POINTER).read_text())
    assert pointer["id"] == ids[-1] and pointer["range"] == {"since": "2023-07-30", "until": "2023-07-30"}


def test_the_closing_batch_finalizes_every_aggregate_function(spark, tmp_path):
    """Every window still held when the range is read, closed by Spark itself, equals plain
    Python's result, for each aggregate function and an expression."""
    raw = {
        "name": "spend",
        "source": {
            "format": "json",
            "schema": {"user_id": "string", "amount": "double", "items": "long", "ts": "string"},
            "event_time": {"column": "ts"},
        },
        "columns": {"big": "amount > 1"},
        "watermark": "10 minutes",
        "window": {"duration": "10 minutes", "slide": "5 minutes"},
        "keys": ["user_id"],
        "aggregates": [
            {"name": "n", "function": "count"},
            {"name": "total", "function": "sum", "column": "amount"},
            {"name": "mean", "function": "avg", "column": "amount"},
            {"name": "fewest", "function": "min", "column": "items"},
            {"name": "most", "function": "max", "column": "items"},
            {"name": "items_total", "function": "sum", "column": "items"},
            {"name": "kinds", "function": "approx_count_distinct", "column": "items"},
            {"name": "bigs", "function": "count_if", "column": "big"},
            {"name": "median", "function": "percentile_approx", "column": "items", "percentage": 0.5},
            {"name": "spread", "function": "stddev", "column": "items"},
            {"name": "var", "function": "variance", "column": "items"},
            {"name": "first_items", "function": "min_by", "column": "items", "by": "ts"},
            {"name": "last_items", "function": "max_by", "column": "items", "by": "ts"},
            {"name": "range", "expression": "max(items) - min(items)"},
        ],
        "output": {"format": "parquet"},
    }
    spec = declare.from_mapping(raw)
    rows = [("a", 1.5, 3, 0), ("a", 2.0, 1, 4), ("b", 4.0, 7, 6), ("a", None, 5, 12), ("b", 0.5, 2, 13)]
    lines = [json.dumps({"user_id": u, "amount": amount, "items": items, "ts": at(m)}) for u, amount, items, m in rows]
    locations = Locations.resolve("spend", root=str(tmp_path))
    land(locations.landing, {"spend.json": lines})
    report = run_pipeline(spark, spec, locations)
    assert report.output_rows == 0  # nothing reached the watermark (newest event 13 min, delay 10 min)
    assert close_range(spec, locations)
    closing = run_pipeline(spark, spec, locations)  # the closing batch, as stage.reprocess runs it
    assert (closing.input_rows, closing.batches) == (0, 1)
    assert not close_range(spec, locations)  # closed once
    staged = stage_closed_range(spark, spec, locations, str(tmp_path / "stage"))

    expected = defaultdict(list)
    for user, amount, items, minute in rows:
        for start_minute in range(minute // 5 * 5 - 5, minute // 5 * 5 + 1, 5):
            expected[(T0 + timedelta(minutes=start_minute), user)].append((amount, items, minute))
    written = spark.read.parquet(str(tmp_path / "stage")).collect()
    assert (staged.held_rows, staged.emitted_rows, len(written)) == (len(expected), 0, len(expected))
    for row in written:
        values = expected[(row.window_start.replace(tzinfo=UTC), row.user_id)]
        amounts = [a for a, _, _ in values if a is not None]
        items = sorted(i for _, i, _ in values)
        assert row.n == len(values)
        # SQL: the sum and average of no values (only nulls) are null.
        assert row.total == (pytest.approx(sum(amounts)) if amounts else None)
        assert row.mean == (pytest.approx(sum(amounts) / len(amounts)) if amounts else None)
        assert (row.fewest, row.most, row.items_total, row.range) == (
            min(items),
            max(items),
            sum(items),
            max(items) - min(items),
        )
        assert (row.kinds, row.bigs) == (len(set(items)), sum(1 for a in amounts if a > 1))
        assert row.median == items[math.ceil(0.5 * len(items)) - 1]  # the least with half the values at or below it
        # Sample variance and deviation: null for one value.
        var = statistics.variance(items) if len(items) > 1 else None
        assert row.var == (pytest.approx(var) if var is not None else None)
        assert row.spread == (pytest.approx(math.sqrt(var)) if var is not None else None)
        by_time = sorted(values, key=lambda value: value[2])
        assert (row.first_items, row.last_items) == (by_time[0][1], by_time[-1][1])


def test_a_rerun_of_the_same_backfill_resumes_and_restages_the_same_result(spark, tmp_path):
    land_days(tmp_path)
    request = plan_for(tmp_path, since="2023-07-31", until="2023-08-01", max_files_per_trigger=2)
    first = run_backfill(spark, request)
    again = run_backfill(spark, request)  # e.g. an Airflow retry after the stage step failed
    assert {k: v for k, v in again.to_dict().items() if k != "runs"} == {
        k: v for k, v in first.to_dict().items() if k != "runs"
    }
    assert len(again.runs) == 3  # the range's, its closing batch's, and the rerun's (nothing new)
    assert published_after(spark, request) == table_rows(spark, request.stage)


def _lines(files: dict[str, list[str]]) -> list[str]:
    return [line for lines in files.values() for line in lines]


@pytest.fixture
def cli(spark):
    """`python -m jobs ...` in this process, on the shared session (main() finds it)."""
    import signal

    from jobs.cli import main

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield main
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def test_the_cli_backfills_validates_and_publishes_in_one_command(cli, spark, tmp_path, capsys):
    days = land_days(tmp_path)
    code = cli(["backfill", "clickstream", "--root", str(tmp_path), "--prefix", "dt=2023-08-01", "--id", "cli-1"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    model = ClickstreamModel()
    model.run([_lines(days["dt=2023-08-01"])])
    publish_to = tmp_path / "published" / "clickstream"
    assert backfill.current_version(str(publish_to)) == str(publish_to / "versions" / "cli-1")
    assert published_rows(spark, str(publish_to)) == model.closed_range_rows()
    assert f"+ {len(model.state)} last windows the range's closing batch wrote" in printed
    assert f"published: {publish_to}/_CURRENT.json" in printed


def test_the_cli_refuses_bad_backfill_params_before_any_work(cli, tmp_path, capsys):
    land_days(tmp_path)
    code = cli(["backfill", "clickstream", "--root", str(tmp_path), "--since", "2023-07-31", "--until", "2023-07-30"])
    assert code == 2
    assert "since 2023-07-31 is after until 2023-07-30" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["landing"]


@pytest.mark.parametrize("name", sorted(declare.load_all()))
def test_every_shipped_pipeline_backfills_or_says_why_it_cannot(cli, tmp_path, capsys, name):
    """Before, a backfill of a pipeline keyed by a path (github_activity's `repo.name`) failed
    after its staging run: the state held the key as Spark names it, not as its column."""
    from demo import samples
    from jobs.lake.layout import join

    pipeline = declare.load(name)
    locations = Locations.resolve(name, root=str(tmp_path))
    for file, text in samples.DIMENSIONS.get(name, {}).items():
        Path(locations.dimensions).mkdir(parents=True, exist_ok=True)
        Path(join(locations.dimensions, file)).write_text(text)
    for arrival in samples.arrivals(name):  # but a load test's file, which stops every run (a `fail` rule)
        land_in_order(
            join(locations.landing, "dt=2023-07-30"), {k: v for k, v in arrival.items() if "load-test" not in k}
        )
    published = str(tmp_path / "published" / name)  # a copy: a Delta table's range needs a production table

    code = cli(
        [
            "backfill",
            name,
            "--root",
            str(tmp_path),
            "--since",
            "2023-07-30",
            "--until",
            "2023-07-30",
            "--publish-to",
            published,
        ]
    )

    said = capsys.readouterr()
    refusal = pattern_of(pipeline).backfill_refusal
    if refusal is None:
        assert code == 0, said.out + said.err
        assert f"published: {published}/" in said.out
    else:
        assert code == 2 and refusal.split(":")[0] in said.err, said.err
