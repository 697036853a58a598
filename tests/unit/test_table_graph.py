"""Declarations that read other pipelines' tables (`source: {table: ...}`), checked when they
load: the event time and the table format each takes, and a table no pipeline writes, a cycle,
a source that says what the table says, a landed-file retention, each refused with why."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobs import declare

RAW = {
    "name": "raw",
    "source": {"format": "json", "schema": {"user_id": "string", "ts": "string"}, "event_time": {"column": "ts"}},
    "output": {},
}
COUNTS = {
    "name": "counts",
    "source": {"table": "raw"},
    "watermark": "5 minutes",
    "window": {"duration": "1 minute"},
    "keys": ["user_id"],
    "aggregates": [{"name": "n", "function": "count"}],
    "output": {},
}


def folder_of(tmp_path: Path, *raws: dict) -> Path:
    folder = tmp_path / "pipelines"
    folder.mkdir(exist_ok=True)
    for raw in raws:
        (folder / f"{raw['name']}.yaml").write_text(yaml.safe_dump(raw))
    return folder


def reading(name: str, table: str, **source: object) -> dict:
    return {"name": name, "source": {"table": table, **source}, "output": {}}


def test_a_chain_loads_each_level_taking_the_time_of_the_table_it_reads(tmp_path):
    hourly = {**COUNTS, "name": "hourly", "source": {"table": "counts"}, "window": {"duration": "1 hour"}}
    own_time = reading("own_time", "raw", event_time={"column": "ts", "format": "epoch_seconds"})
    delta = {**RAW, "name": "raw_delta", "output": {"format": "delta"}}
    of_delta = reading("of_delta", "raw_delta")
    pipelines = declare.load_all(folder_of(tmp_path, RAW, COUNTS, hourly, own_time, delta, of_delta))
    assert pipelines["raw"].source.table is None
    assert pipelines["counts"].source.table == "raw" and pipelines["counts"].source.infer_schema
    assert pipelines["counts"].source.event_time.column == "ts"  # an events table: its time field
    assert pipelines["hourly"].source.event_time.column == "window_end"  # a window table's
    assert pipelines["own_time"].source.event_time.format == "epoch_seconds"
    assert (pipelines["counts"].source.table_format, pipelines["of_delta"].source.table_format) == ("parquet", "delta")


@pytest.mark.parametrize(
    ("raws", "name", "message"),
    [
        ([RAW, reading("typo", "rwa")], "typo", "source table 'rwa': no declared pipeline writes it"),
        ([reading("selfish", "selfish")], "selfish", "source tables make a cycle: selfish reads selfish"),
        (
            [reading("loop_a", "loop_b"), reading("loop_b", "loop_a")],
            "loop_a",
            "source tables make a cycle: loop_a reads loop_b reads loop_a",
        ),
        (
            [{**RAW, "output": {"format": "delta"}}, reading("of_delta", "raw", table_format="parquet")],
            "of_delta",
            "source table 'raw': its format is what its pipeline declares; leave out table_format",
        ),
        (
            [RAW, reading("says_more", "raw", format="json", schema={"ts": "string"})],
            "says_more",
            "takes its format and schema from the table; leave out format, schema",
        ),
        (
            [RAW, {**reading("retires", "raw"), "retention": {"landed": "delete"}}],
            "retires",
            "retention.landed removes landed files; this source reads table 'raw'",
        ),
        (
            [RAW, reading("product_time", "raw", event_time={"column": "event_time"})],
            "product_time",
            "event_time column 'event_time' is the product's own name; the table's column of that name is read "
            "as 'event_time_1'; or leave event_time out: the table's own is 'ts'",
        ),
        (
            [{**RAW, "retention": {"output_after": "30 days"}}, reading("behind", "raw")],
            "behind",
            "source table 'raw' drops its output files after a while (its retention.output_after)",
        ),
        (
            [RAW, {**reading("on_arrival", "raw"), "schedule": "on_arrival"}],
            "on_arrival",
            "schedule on_arrival watches a landing; this source reads table 'raw'",
        ),
        (
            [{**RAW, "name": "broken", "window": {"duration": "soon"}}, reading("of_broken", "broken")],
            "of_broken",
            "source table 'broken': its declaration does not load",
        ),
        (
            [RAW, reading("middle", "rwa"), reading("lower", "middle")],
            "lower",
            "source table 'middle': its declaration does not load (source table 'rwa': no declared pipeline",
        ),
    ],
    ids=[
        "unknown",
        "itself",
        "cycle",
        "says-the-format",
        "says-the-schema",
        "landed-retention",
        "product-time",
        "output-retention",
        "on-arrival",
        "broken-upstream",
        "upstream-reads-no-table",
    ],
)
def test_a_table_source_that_cannot_be_is_refused_on_load(tmp_path, raws, name, message):
    loaded = declare.load_each(folder_of(tmp_path, *raws))
    assert name in loaded.broken and message in loaded.broken[name], loaded.broken
    with pytest.raises(declare.DeclarationError, match="source"):
        declare.load(name, folder_of(tmp_path))


def test_a_processor_table_has_no_time_to_take(tmp_path):
    from jobs.declare.load import pipelines_dir

    sessions = yaml.safe_load((pipelines_dir() / "spending_sessions.yaml").read_text())
    loaded = declare.load_each(folder_of(tmp_path, sessions, reading("after", "spending_sessions")))
    assert "spending_sessions" in loaded.pipelines
    assert "a process table has no time of its own; declare source.event_time" in loaded.broken["after"]


def test_a_misspelt_table_setting_or_schedule_says_what_was_meant(tmp_path):
    loaded = declare.load_each(folder_of(tmp_path, RAW, {**reading("typo", "raw"), "schedule": "on_upstraem"}))
    assert "'on_upstraem' is not a schedule Airflow reads (did you mean 'on_upstream'?)" in loaded.broken["typo"]
    with pytest.raises(declare.DeclarationError, match=r"unknown setting 'tabel' \(did you mean 'table'\?\)"):
        declare.from_mapping({"name": "typo", "source": {"tabel": "raw"}, "output": {}})
