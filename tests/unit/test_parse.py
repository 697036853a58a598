"""The pure flow functions (parse, the window pattern, the late-row rule) on small batch
DataFrames, against hand-computed results."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from jobs.columns import EVENT_TIME, LINE, LINE_NUMBER, QUARANTINE_DETAIL, QUARANTINE_REASON, SOURCE_FILE
from jobs.declare.computing import Window
from jobs.declare.parts import Source
from jobs.flow.parse import parse_events, usable
from jobs.flow.patterns import pattern_of
from jobs.flow.patterns.window import latest_window_end
from tests.helpers import event


def source(
    schema: dict[str, str], required: list[str], time_field: str = "ts", fmt: str = "iso8601", types: str = "strict"
) -> Source:
    raw = {
        "format": "json",
        "schema": schema,
        "required": required,
        "event_time": {"column": time_field, "format": fmt},
        "types": types,
    }
    return Source.model_validate(raw)


def lines_df(spark, lines, source_file="landing/f.json"):
    # One partition: a file part is read by one task, which numbers its lines.
    return spark.createDataFrame(
        [(line, source_file) for line in lines], f"{LINE} string, {SOURCE_FILE} string"
    ).coalesce(1)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (event("u1", "2023-07-30T10:00:20Z"), None),
        (event("u1", "2023-07-30T12:00:20+02:00"), None),
        (event("u1", "2023-07-30T10:00:20Z", extra_field=[1, 2]), None),
        ("{broken", "malformed_json"),
        ("[1, 2]", "not_a_json_object"),
        ('"just a string"', "not_a_json_object"),
        (
            json.dumps({"user_id": "u1", "eventtimestamp": "2023-07-30T10:00:20Z", "event": {"nested": 1}}),
            "wrong_field_type",
        ),
        (json.dumps({"user_id": 42, "eventtimestamp": "2023-07-30T10:00:20Z"}), "wrong_field_type"),
        (event("u1", "2023-07-30T10:00:20Z") + " junk", "malformed_json"),
        ("\ufeff" + event("u1", "2023-07-30T10:00:20Z"), None),  # a byte order mark
        (event("u1", "2023-07-30T10:00:20Z") + "\r", None),  # a CRLF line end
        ("{'user_id': 'u1'}", "malformed_json"),
        ('{"user_id": NaN}', "malformed_json"),
        (event(None, "2023-07-30T10:00:20Z"), "missing_user_id"),
        (event("u1", None), "missing_eventtimestamp"),
        (event("u1", "yesterday"), "unparseable_eventtimestamp"),
        (event("u1", "2023-13-45T10:00:00Z"), "unparseable_eventtimestamp"),
    ],
)
def test_parse_events_reasons(spark, clickstream, line, reason):
    rows = parse_events(lines_df(spark, [line]), clickstream.source).collect()
    assert len(rows) == 1
    assert rows[0][QUARANTINE_REASON] == reason


def test_parse_events_reads_offsets_as_utc_and_drops_blank_lines(spark, clickstream):
    lines = [event("u1", "2023-07-30T12:00:20+02:00"), "", "   ", event("u2", "2023-07-30T10:00:20Z")]
    rows = parse_events(lines_df(spark, lines), clickstream.source).orderBy("user_id").collect()
    assert [(r.user_id, r[EVENT_TIME]) for r in rows] == [
        ("u1", datetime(2023, 7, 30, 10, 0, 20)),
        ("u2", datetime(2023, 7, 30, 10, 0, 20)),
    ]


def test_a_quarantined_record_keeps_file_line_number_line_reason_and_detail(spark, clickstream):
    lines = ["{broken", "", event("u1", "2023-07-30T10:00:20Z"), "[]"]
    parsed = parse_events(lines_df(spark, lines), clickstream.source)
    columns = [SOURCE_FILE, LINE_NUMBER, LINE, QUARANTINE_REASON, QUARANTINE_DETAIL]
    bad = parsed.where(F.col(QUARANTINE_REASON).isNotNull()).select(*columns).orderBy(LINE_NUMBER)
    assert [tuple(r) for r in bad.collect()] == [
        ("landing/f.json", 1, "{broken", "malformed_json", "JSON is malformed: object keys must be strings (byte 1)"),
        ("landing/f.json", 4, "[]", "not_a_json_object", "a JSON array"),
    ]
    assert usable(parsed).count() == 1


@pytest.mark.parametrize(
    ("value", "found"),
    [(42, "integer"), (4.2, "number"), (True, "boolean"), ({"a": 1}, "object"), ([1], "array")],
)
def test_a_string_field_takes_only_a_json_string_unless_coerced(spark, value, found):
    strict = source({"user_id": "string", "ts": "string"}, ["user_id"])
    line = json.dumps({"user_id": value, "ts": "2023-07-30T10:00:00Z"})
    row = parse_events(lines_df(spark, [line]), strict).first()
    assert (row[QUARANTINE_REASON], row[QUARANTINE_DETAIL]) == (
        "wrong_field_type",
        f"user_id: expected string, got {found}",
    )
    coerced = source({"user_id": "string", "ts": "string"}, ["user_id"], types="coerce")
    row = parse_events(lines_df(spark, [line]), coerced).first()
    assert (row.user_id, row[QUARANTINE_REASON]) == (json.dumps(value, separators=(",", ":")), None)


def test_numbers_out_of_range_are_the_wrong_type(spark):
    declared = source({"user_id": "string", "n": "int", "ts": "string"}, ["user_id"])
    lines = [json.dumps({"user_id": "u", "n": n, "ts": "2023-07-30T10:00:00Z"}) for n in (2**31 - 1, 2**31)]
    rows = parse_events(lines_df(spark, lines), declared).orderBy(LINE_NUMBER).collect()
    assert [(r.n, r[QUARANTINE_REASON]) for r in rows] == [(2**31 - 1, None), (None, "wrong_field_type")]


def test_window_aggregate_counts_per_window_and_user(spark, clickstream):
    times = ["10:00:01", "10:00:59", "10:01:00", "10:01:30", "10:05:00", "10:00:30"]
    users = ["u1", "u1", "u1", "u2", "u2", "u2"]
    lines = [event(u, f"2023-07-30T{t}Z") for u, t in zip(users, times, strict=True)]
    table = (
        lines_df(spark, lines)
        .transform(parse_events, clickstream.source)
        .transform(usable)
        .transform(pattern_of(clickstream).table)
    )
    counts = Counter((datetime.fromisoformat(f"2023-07-30T{t[:5]}:00"), u) for u, t in zip(users, times, strict=True))
    expected = spark.createDataFrame(
        [(start, start + timedelta(minutes=1), user, n, start.date()) for (start, user), n in counts.items()],
        "window_start timestamp, window_end timestamp, user_id string, event_count long, window_date date",
    )
    assertDataFrameEqual(table, expected)


def test_latest_window_end_for_tumbling_and_sliding(spark):
    df = spark.createDataFrame([(datetime(2023, 7, 30, 10, 7, 30),)], "t timestamp")
    tumbling = df.select(latest_window_end(F.col("t"), Window(duration_s="60 seconds", slide_s="60 seconds"))).first()[
        0
    ]
    sliding = df.select(latest_window_end(F.col("t"), Window(duration_s="600 seconds", slide_s="300 seconds"))).first()[
        0
    ]
    assert tumbling == datetime(2023, 7, 30, 10, 8)
    assert sliding == datetime(2023, 7, 30, 10, 15)  # the window 10:05-10:15


@pytest.mark.parametrize(
    ("event_time", "late_at"),
    [("10:04:59", "10:05:00"), ("10:05:00", "10:06:00")],  # a row is late when its window ended by the watermark
)
def test_a_window_pipeline_counts_a_row_late_once_its_window_ended(spark, clickstream, event_time, late_at):
    row = spark.createDataFrame([(datetime.fromisoformat(f"2023-07-30T{event_time}"),)], "t timestamp")
    found = row.select(pattern_of(clickstream).late_at(F.col("t"))).first()[0]
    assert found == datetime.fromisoformat(f"2023-07-30T{late_at}")


def test_a_value_of_the_wrong_type_is_quarantined(spark):
    declared = source({"user_id": "string", "steps": "long", "ts": "string"}, ["user_id"])
    lines = [
        json.dumps({"user_id": "u1", "steps": 12, "ts": "2023-07-30T10:00:00Z"}),
        json.dumps({"user_id": "u1", "steps": "twelve", "ts": "2023-07-30T10:00:00Z"}),
    ]
    rows = parse_events(lines_df(spark, lines), declared).orderBy(LINE_NUMBER).collect()
    assert [(r.steps, r[QUARANTINE_REASON]) for r in rows] == [(12, None), (None, "wrong_field_type")]


@pytest.mark.parametrize(
    ("fmt", "raw", "expected"),
    [
        ("epoch_seconds", "1690711220", datetime(2023, 7, 30, 10, 0, 20)),
        ("epoch_millis", "1690711220500", datetime(2023, 7, 30, 10, 0, 20, 500000)),
        ("yyyy-MM-dd HH:mm:ss", "2023-07-30 10:00:20", datetime(2023, 7, 30, 10, 0, 20)),
        ("yyyy-MM-dd HH:mm:ss", "2023-07-30T10:00:20Z", None),
    ],
)
def test_event_time_formats(spark, fmt, raw, expected):
    declared = source({"user_id": "string", "ts": "string"}, ["user_id"], fmt=fmt)
    row = parse_events(lines_df(spark, [json.dumps({"user_id": "u", "ts": raw})]), declared).first()
    assert row[EVENT_TIME] == expected
    assert row[QUARANTINE_REASON] == (None if expected else "unparseable_ts")
