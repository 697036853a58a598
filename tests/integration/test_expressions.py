"""A declaration's expressions (issue 72): computed columns, `where`, keys and aggregates over
them, run on real availableNow queries and compared with what the landed lines say, worked
out here by hand."""

from __future__ import annotations

from datetime import datetime

import yaml

from jobs import declare
from jobs.accounting.ledger import Ledger
from jobs.declare.load import pipelines_dir
from jobs.lake.layout import Locations
from tests.helpers import event, land_in_order, run_pipeline


def declared(**changes: object) -> declare.PipelineBase:
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    return declare.from_mapping({**raw, "name": "active_users", **changes})


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2023-07-30T{clock}")  # as Spark gives it back: the session's zone is UTC


def rows(spark, output: str, *columns: str) -> list[tuple]:
    return sorted(tuple(row) for row in spark.read.parquet(output).select(*columns).collect())


def test_where_filters_rows_counted_as_filtered_and_the_watermark_follows_them(spark, tmp_path):
    pipeline = declared(
        columns={"user": "lower(user_id)", "id_length": "length(event_id)"},
        where="event <> 'scroll'",
        keys=["user"],
        aggregates=[
            {"name": "events", "function": "count"},
            {"name": "ids", "function": "approx_count_distinct", "column": "event_id"},
            {"name": "longest_id", "expression": "max(id_length)"},
        ],
    )
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

    ledger = Ledger(locations.ledger)
    files = {
        f["path"].rsplit("/", 1)[-1]: f
        for batch in sorted(ledger.accounted_batches())
        for f in ledger.read_account(batch)["files"]
    }
    assert (files["a.json"]["filtered_rows"], files["a.json"]["used_rows"]) == (1, 2)
    assert (files["b.json"]["late_rows_dropped"], files["b.json"]["used_rows"]) == (1, 1)
