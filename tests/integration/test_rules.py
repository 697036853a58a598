"""Row rules on the shipped clickstream (jobs/pipelines/clickstream.yaml: known_event
quarantines, has_event_id warns, no_load_test_traffic fails), each run compared with the
independent model, which learns the rules from the YAML and has DuckDB evaluate them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from jobs import declare
from jobs.cli import main
from jobs.declare.load import pipelines_dir
from jobs.lake.layout import Locations
from jobs.run.runner import RunFailed, RunRefused
from tests.helpers import assert_run_matches, event, land_in_order, run_pipeline, table_rows
from tests.model import ClickstreamModel, RuleBook, RuleStop, clickstream_reading, record


def quarantined(locations: Locations) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted(Path(locations.quarantine).glob("batch_id=*/*.json"))
        for line in path.read_text().splitlines()
    ]


def expected_violations(lines: list[str]) -> dict[str, int]:
    """Rule -> this file's usable records that break it (the model's reading and rule book)."""
    book = RuleBook.of("clickstream")
    broken = Counter(rule["name"] for line in lines if clickstream_reading(line) for rule in book.broken(record(line)))
    return dict(broken)


def test_warn_keeps_quarantine_sets_aside_and_each_rule_is_counted_per_run_and_per_file(
    spark, clickstream, locations, capsys
):
    files = {
        "a.json": [
            event("u1", "2023-07-30T10:00:10Z", "e1"),
            event("u1", "2023-07-30T10:00:20Z", "e2", event="clik"),  # known_event: quarantined
            event("u2", "2023-07-30T10:00:30Z", None),  # has_event_id: kept, counted
            "{",
        ],
        "b.json": [
            event("u2", "2023-07-30T10:01:10Z", None, event="clik"),  # breaks both: counted twice, quarantined once
            event("u3", "2023-07-30T10:09:00Z", "e4", event="purchase"),
        ],
    }
    land_in_order(locations.landing, files)
    model = ClickstreamModel()

    report = run_pipeline(spark, clickstream, locations)

    expected = model.run([[line for lines in files.values() for line in lines]])
    assert_run_matches(report, expected)
    assert expected.violations == {"known_event": 2, "has_event_id": 2}  # the model agrees on what the data holds
    assert {name: (c.action, c.violations) for name, c in report.rules.items()} == {
        "known_event": ("quarantine", 2),
        "has_event_id": ("warn", 2),
        "no_load_test_traffic": ("fail", 0),
    }
    assert report.rows_balance
    assert table_rows(spark, locations.output) == model.rows()
    by_rule = [
        (r["reason"], json.loads(r["line"])["event"]) for r in quarantined(locations) if r["reason"] != "malformed_json"
    ]
    assert sorted(by_rule) == [("rule:known_event", "clik"), ("rule:known_event", "clik")]
    detail = next(r["detail"] for r in quarantined(locations) if r["reason"] == "rule:known_event")
    assert detail == """event IN ('click', 'view', 'scroll', 'purchase') is false for {"event":"clik"}"""
    assert "known_event 2 (quarantine), has_event_id 2 (warn), no_load_test_traffic 0 (fail)" in report.summary()

    # The file ledger: each file's rows that break each rule, from the same one read.
    capsys.readouterr()
    assert main(["files", "clickstream", "--root", str(Path(locations.landing).parent.parent), "--json"]) == 0
    ledger = {
        Path(entry["path"]).name: entry["violations"] for entry in map(json.loads, capsys.readouterr().out.splitlines())
    }
    assert ledger == {name: expected_violations(lines) for name, lines in files.items()}
    assert ledger == {"a.json": {"known_event": 1, "has_event_id": 1}, "b.json": {"known_event": 1, "has_event_id": 1}}


def test_a_fail_rule_stops_the_run_before_its_batch_commits_until_the_file_is_quarantined(
    spark, clickstream, root, locations
):
    first = {"a.json": [event("u1", "2023-07-30T10:00:10Z", "e1"), event("u2", "2023-07-30T10:00:20Z", "e2")]}
    land_in_order(locations.landing, first)
    model = ClickstreamModel()
    model.run([first["a.json"]])
    run_pipeline(spark, clickstream, locations)
    table_before = table_rows(spark, locations.output)
    poisoned = [event("u1", "2023-07-30T10:06:00Z", "e3"), "", event("loadtest-7", "2023-07-30T10:06:10Z", "e4")]
    good = [event("u2", "2023-07-30T10:07:00Z", "e5")]
    land_in_order(locations.landing, {"b.json": poisoned, "c.json": good})
    stuck = f"{locations.landing}/b.json"

    for _ in range(2):  # every rerun stops at the same record: nothing of the batch commits
        with pytest.raises(RunFailed) as failed:
            run_pipeline(spark, clickstream, locations)
        message = str(failed.value)
        assert "\n" not in message and "Traceback" not in message and "at org.apache" not in message
        assert message.split(" ", 2)[2].startswith(  # "batch N stopped: ..."
            f"stopped: a record breaks rule 'no_load_test_traffic' (on_violation: fail): {stuck} line 3: "
            """user_id NOT LIKE 'loadtest-%' is false for {"user_id":"loadtest-7"}"""
        )
        assert f"python -m jobs quarantine-file clickstream {stuck} --checkpoint {locations.checkpoint}" in message
        assert table_rows(spark, locations.output) == table_before

    with pytest.raises(RuleStop, match="no_load_test_traffic"):
        model.run([poisoned + good])  # the model stops on the same record
    assert main(["quarantine-file", "clickstream", stuck, "--root", str(root), "--reason", "load test"]) == 0
    report = run_pipeline(spark, clickstream, locations)

    expected = ClickstreamModel()
    expected.run([first["a.json"]])
    result = expected.run([good])
    assert (report.input_rows, report.quarantined_rows, report.used_rows) == (
        result.input_rows + 2,  # b.json's two records, quarantined unread
        result.quarantined_rows + 2,
        result.used_rows,
    )
    assert table_rows(spark, locations.output) == expected.rows()


def test_a_rule_spark_cannot_evaluate_refuses_the_run_before_anything_is_read(spark, tmp_path):
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    raw["rules"] = [
        {"name": "short_id", "check": "length(user_id)", "on_violation": "warn"}
    ]  # a number, not true/false
    pipeline = declare.from_mapping(raw)
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    land_in_order(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:10Z")]})

    with pytest.raises(RunRefused, match=r"rule 'short_id': 'length\(user_id\)' is a int, not true or false"):
        run_pipeline(spark, pipeline, locations)
