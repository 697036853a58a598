"""Nested events: declared objects and arrays read strictly at every depth, paths where
fields are named (keys, event time, deduplication, a join), hints with an inferred schema,
and rescue with its counts. Each is compared with results written out here or computed
by tests/model.py, never by the product."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import yaml

from jobs import declare
from jobs.accounting.ledger import Ledger
from jobs.cli import main
from jobs.lake.layout import Locations
from tests.helpers import land, land_in_order, run_pipeline
from tests.histories import ordered, table
from tests.model import Reading, WindowModel, is_long, iso_time, record

SCHEMA = {
    "id": "string",
    "type": "string",
    "actor": {"login": "string", "org": {"id": "long", "name": "string"}},
    "repo": {"id": "long", "name": "string"},
    "payload": {"size": "long", "amount": "decimal(10,2)", "commits": [{"sha": "string", "n": "int"}]},
    "meta": {"id": "string", "at": "string"},
}


def pipeline(pattern: str = "events", **changes) -> declare.PipelineBase:
    return declare.from_mapping(raw_declaration(pattern, **changes))


def raw_declaration(pattern: str = "events", **changes) -> dict:
    raw = {
        "name": "nested",
        "pattern": pattern,
        "source": {
            "format": "json",
            "schema": SCHEMA,
            "required": ["id"],
            "event_time": {"column": "meta.at"},  # a path
        },
        "output": {"format": "parquet"},
    }
    for key, value in changes.items():
        if key in ("schema", "hints", "on_type_mismatch", "required", "event_time"):
            raw["source"][key] = value
        else:
            raw[key] = value
    return raw


def github(number: int, minute: float, **fields) -> dict:
    event = {
        "id": f"e{number}",
        "type": "PushEvent",
        "actor": {"login": "octocat", "org": {"id": 9, "name": "github", "url": "ignored"}, "avatar": "ignored"},
        "repo": {"id": 1296269, "name": "octocat/Hello-World", "url": "ignored at depth 1"},
        "payload": {
            "size": 2,
            "amount": 12.5,
            "commits": [{"sha": "a1", "n": 1, "author": {"name": "ignored at depth 3"}}, {"sha": "b2", "n": 2}],
        },
        "meta": {
            "id": f"m{number}",
            "at": (datetime(2023, 7, 30, 10, tzinfo=UTC) + timedelta(minutes=minute)).isoformat(),
        },
        "public": True,
    }
    return _changed(event, fields)


def _changed(event: dict, fields: dict) -> dict:
    for path, value in fields.items():  # "repo__id" sets event["repo"]["id"]
        *parents, last = path.split("__")
        inner = event
        for name in parents:
            inner = inner[int(name)] if isinstance(inner, list) else inner[name]
        inner[last] = value
    return event


def quarantined(spark, locations: Locations) -> list[tuple[str, str]]:
    rows = spark.read.json(locations.quarantine).select("reason", "detail").collect()
    return sorted((row.reason, row.detail) for row in rows)


def test_nested_types_are_strict_at_every_depth_and_the_reason_names_the_path(spark, tmp_path):
    spec = pipeline()
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    wrong = {
        "repo__id": "1296269",  # depth 1
        "actor__org__id": "9",  # depth 2
        "payload__commits__1__sha": 5,  # inside an array
        "payload__size": 2.5,  # a fraction for a long
        "payload__amount": 1.005,  # more digits than decimal(10,2) holds
        "repo": "octocat/Hello-World",  # an object expected
    }
    lines = [json.dumps(github(0, 1))] + [
        json.dumps(github(n + 1, 1, **{path: value})) for n, (path, value) in enumerate(wrong.items())
    ]
    land(locations.landing, {"events.json": lines})

    report = run_pipeline(spark, spec, locations)

    assert (report.input_rows, report.used_rows, report.quarantined_rows) == (7, 1, 6)
    assert quarantined(spark, locations) == sorted(
        [
            ("wrong_field_type", "repo.id: expected long, got string"),
            ("wrong_field_type", "actor.org.id: expected long, got string"),
            ("wrong_field_type", "payload.commits[1].sha: expected string, got integer"),
            ("wrong_field_type", "payload.size: expected long, got number"),
            ("wrong_field_type", "payload.amount: expected decimal(10,2), got 1.005, more digits than it holds"),
            ("wrong_field_type", "repo: expected struct<id:long,name:string>, got string"),
        ]
    )
    [row] = spark.read.parquet(locations.output).collect()
    # Only the declared fields, at every depth; a decimal exactly.
    assert row.actor.asDict(recursive=True) == {"login": "octocat", "org": {"id": 9, "name": "github"}}
    assert row.repo.asDict() == {"id": 1296269, "name": "octocat/Hello-World"}
    assert row.payload.asDict(recursive=True) == {
        "size": 2,
        "amount": Decimal("12.50"),
        "commits": [{"sha": "a1", "n": 1}, {"sha": "b2", "n": 2}],
    }
    assert row.event_time == datetime(2023, 7, 30, 10, 1)


def activity_reading(line: str) -> Reading | None:
    """The window test's events: keyed by (type, repo.name, actor.login), timed by meta.at."""
    found = record(line)
    if found is None or not found.get("id"):
        return None
    repo, actor, meta, payload = (found.get(f) or {} for f in ("repo", "actor", "meta", "payload"))
    if not (is_long(repo.get("id")) and is_long(payload.get("size"))):
        return None
    moment = iso_time(meta.get("at"))
    return Reading(moment, (found["type"], repo["name"], actor["login"]), payload["size"]) if moment else None


def test_paths_name_the_keys_the_event_time_and_what_is_deduplicated(spark, tmp_path):
    spec = pipeline(
        "window",
        watermark="5 minutes",
        window={"duration": "1 minute"},
        keys=["type", {"repo": "repo.name"}, "actor.login"],
        deduplicate=["meta.id"],
        aggregates=[
            {"name": "events", "function": "count"},
            {"name": "commits", "function": "sum", "column": "payload.size"},
        ],
        required=["id", "meta.id"],
    )
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    first = [github(n, n * 0.8, type="PushEvent" if n % 3 else "WatchEvent") for n in range(10)]
    first += [github(20, 1.5, meta__id="m1"), github(21, 2, repo__id="x")]  # meta.id seen before; a wrong type
    second = [github(30 + n, 9 + n * 0.5, actor__login="torvalds") for n in range(6)]
    second.append(github(40, 0.5))  # behind the watermark by now
    arrivals = [{"a.json": [json.dumps(e) for e in first]}, {"b.json": [json.dumps(e) for e in second]}]
    model = WindowModel(
        read=activity_reading,
        finish=lambda sizes: (len(sizes), sum(sizes)),
        delay=timedelta(minutes=5),
        window=timedelta(minutes=1),
        identity=lambda line: json.loads(line)["meta"]["id"],
    )

    results = []
    for arrival in arrivals:
        land_in_order(locations.landing, arrival)
        report = run_pipeline(spark, spec, locations)
        expected = model.run([[line for lines in arrival.values() for line in lines]])
        results.append(expected)
        assert (report.used_rows, report.quarantined_rows, report.late_rows_dropped, report.duplicates_dropped) == (
            expected.used_rows,
            expected.quarantined_rows,
            expected.late_rows_dropped,
            expected.duplicates_dropped,
        )

    assert spark.read.parquet(locations.output).columns[:7] == [
        "window_start",
        "window_end",
        "type",
        "repo",  # named in the declaration
        "actor_login",  # a path's column_name
        "events",
        "commits",
    ]
    assert table(spark, spec, locations) == ordered(model.rows())
    dropped = [(r.duplicates_dropped, r.late_rows_dropped, r.quarantined_rows) for r in results]
    assert dropped == [(1, 0, 1), (0, 1, 0)] and len(model.rows()) >= 4


def test_a_join_matches_on_a_path_of_both_sides(spark, tmp_path):
    impressions = {"impression_id": "string", "ad": {"id": "string", "campaign": "string"}, "shown_at": "string"}
    clicks = {"click_id": "string", "ad": {"id": "string"}, "clicked_at": "string"}
    spec = declare.from_mapping(
        {
            "name": "nested_join",
            "source": {
                "name": "impressions",
                "format": "json",
                "schema": impressions,
                "event_time": {"column": "shown_at"},
            },
            "watermark": "10 minutes",
            "join": {
                "source": {
                    "name": "clicks",
                    "format": "json",
                    "schema": clicks,
                    "event_time": {"column": "clicked_at"},
                },
                "watermark": "10 minutes",
                "key": "ad.id",
                "within": "30 minutes",
            },
            "output": {"format": "parquet"},
        }
    )
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    shown = [("i1", "ad-1", "c-9", "10:00"), ("i2", "ad-2", "c-9", "10:05"), ("i3", "ad-1", "c-7", "11:00")]
    clicked = [("k1", "ad-1", "10:10"), ("k2", "ad-2", "10:50"), ("k3", "ad-1", "11:20"), ("k4", "ad-3", "10:06")]
    land(
        locations.landing,
        {
            "impressions/i.json": [
                json.dumps({"impression_id": i, "ad": {"id": ad, "campaign": c}, "shown_at": f"2023-07-30T{t}:00Z"})
                for i, ad, c, t in shown
            ],
            "clicks/c.json": [
                json.dumps({"click_id": k, "ad": {"id": ad, "x": 1}, "clicked_at": f"2023-07-30T{t}:00Z"})
                for k, ad, t in clicked
            ],
        },
    )

    run_pipeline(spark, spec, locations)

    rows = spark.read.parquet(locations.output).collect()
    # A click matches an impression of its ad at most 30 minutes before it: k1 -> i1, k3 -> i3
    # (k2 is 45 minutes after i2, k4's ad was never shown). The right side's `ad` is left out.
    assert sorted((r.impression_id, r.ad.id, r.ad.campaign, r.click_id) for r in rows) == [
        ("i1", "ad-1", "c-9", "k1"),
        ("i3", "ad-1", "c-7", "k3"),
    ]
    assert spark.read.parquet(locations.output).columns[:5] == [
        "impression_id",
        "ad",
        "shown_at",
        "click_id",
        "clicked_at",
    ]


def test_hints_pin_the_types_an_inferred_schema_would_guess(spark, tmp_path, caplog):
    spec = pipeline(
        schema="infer", hints={"repo.id": "long", "payload.amount": "decimal(10,2)"}, event_time={"column": "meta.at"}
    )
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    numbered = [github(n, 1) for n in range(3)]
    # Spark infers a string for a field that is sometimes a string: the hint keeps it a long.
    land(locations.landing, {"a.json": [json.dumps(e) for e in [*numbered, github(9, 1, repo__id="R9")]]})

    report = run_pipeline(spark, spec, locations)

    assert (report.used_rows, report.quarantined_rows) == (3, 1)
    assert quarantined(spark, locations) == [("wrong_field_type", "repo.id: expected long, got string")]
    recorded = Ledger(locations.ledger).recorded_schema()
    assert "id:string" in recorded["repo"]  # the schema as inferred is what is recorded
    output = spark.read.parquet(locations.output)
    assert output.schema["repo"].dataType.simpleString() == "struct<id:bigint,name:string,url:string>"
    assert output.schema["payload"].dataType["amount"].dataType.simpleString() == "decimal(10,2)"
    assert sorted(r.repo.id for r in output.collect()) == [1296269] * 3
    # The inferred schema is logged as a short outline of its top-level fields.
    [line] = [r.getMessage() for r in caplog.records if "inferred and recorded" in r.getMessage()]
    assert "repo {3 fields}" in line and "payload {3 fields}" in line and len(line) < 400


def test_rescue_keeps_the_event_and_what_did_not_fit_under_its_path_counted(spark, tmp_path, capsys, monkeypatch):
    raw = raw_declaration(on_type_mismatch="rescue")
    spec = declare.from_mapping(raw)
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    events = [
        github(0, 1),
        github(1, 1, repo__id="1296269"),
        github(2, 1, payload__commits__1__sha=5, actor__org__id=[9]),
        github(3, 1, payload__amount="12.345"),
    ]
    land(locations.landing, {"a.json": [*(json.dumps(e) for e in events), '{"id": "cut']})

    report = run_pipeline(spark, spec, locations)

    assert (report.input_rows, report.used_rows, report.quarantined_rows, report.rescued_rows) == (5, 4, 1, 3)
    rows = {r.id: r for r in spark.read.parquet(locations.output).collect()}
    rescued = {name: json.loads(r._rescued_data) if r._rescued_data else None for name, r in rows.items()}
    assert rescued == {
        "e0": None,
        "e1": {"repo.id": "1296269"},
        "e2": {"actor.org.id": "[9]", "payload.commits[1].sha": "5"},
        "e3": {"payload.amount": "12.345"},
    }
    assert rows["e1"].repo.asDict() == {"id": None, "name": "octocat/Hello-World"}
    assert [c.sha for c in rows["e2"].payload.commits] == ["a1", None]
    # In the file ledger too, and in `files`.
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "nested.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(tmp_path / "pipelines"))
    [account] = [Ledger(locations.ledger).read_account(b) for b in Ledger(locations.ledger).accounted_batches()]
    assert account["rescued_rows"] == 3 and account["files"][0]["rescued_rows"] == 3
    assert main(["files", "nested", "--root", str(tmp_path / "root")]) == 0
    header, row, _ = capsys.readouterr().out.splitlines()
    columns = header.split()
    assert row.split()[columns.index("rescued")] == "3"


def test_an_enrichment_matches_on_a_path_to_the_dimension_column_of_its_flat_name(spark, tmp_path):
    spec = pipeline(
        enrich={"table": "repos", "path": "repos.csv", "format": "csv", "key": "repo.name", "columns": ["stars"]}
    )
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    (tmp_path / "root" / "dimensions").mkdir(parents=True)
    (tmp_path / "root" / "dimensions" / "repos.csv").write_text("repo_name,stars\noctocat/Hello-World,42\n")
    events = [github(0, 1), github(1, 1, repo__name="someone/else")]
    land(locations.landing, {"a.json": [json.dumps(e) for e in events]})

    run_pipeline(spark, spec, locations)

    rows = spark.read.parquet(locations.output).collect()
    assert sorted((r.id, r.repo.name, r.stars) for r in rows) == [
        ("e0", "octocat/Hello-World", "42"),
        ("e1", "someone/else", None),  # unmatched: kept, with nulls (the default)
    ]
