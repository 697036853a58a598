"""Property-based tests of parsing, in Spark, for every declared source schema and each
event-time format: records whose event time runs from year 1 to far beyond Spark's range,
with offsets, epoch numbers of any size and NaN, and declared fields of any JSON value.
The parse never fails; each record is either usable, with its event time equal to the
oracle's (Python's datetime, written here) and its declared fields equal to its JSON
values, or quarantined with a reason.

Each example is one Spark job over 40 generated lines, so examples are few and
large (`JOBS_HYPOTHESIS_SPARK_EXAMPLES`, 4 by default).
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from jobs import declare
from jobs.columns import EVENT_TIME, LINE, LINE_NUMBER, QUARANTINE_REASON, SOURCE_FILE
from jobs.declare.parts import Source
from jobs.flow.parse import parse_events
from tests.unit.test_poison_properties import SHAPES, json_scalars, takes

EXAMPLES = int(os.environ.get("JOBS_HYPOTHESIS_SPARK_EXAMPLES", "4"))
LINES = 40
SOURCES = {name: p.source for name, p in declare.load_all().items() if not p.source.infer_schema}
for _fmt in ("epoch_seconds", "epoch_millis"):
    SOURCES[_fmt] = Source.model_validate(
        {"format": "json", "schema": {"id": "string", "t": "string"}, "event_time": {"column": "t", "format": _fmt}}
    )
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST, LAST = datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
PATTERN = "yyyy-MM-dd HH:mm:ss"


def moments():
    """Any time from year 1 to 9999, with an offset of up to 18 hours either way."""
    offsets = st.integers(-18 * 60, 18 * 60).map(lambda m: timezone(timedelta(minutes=m)))
    return st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59), timezones=offsets).map(
        lambda moment: moment.replace(microsecond=0)  # the text has whole seconds
    )


def _iso(moment: datetime) -> str:
    offset = moment.utcoffset()
    zone = "Z" if not offset else moment.strftime("%z")[:3] + ":" + moment.strftime("%z")[3:]
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}{zone}"


@st.composite
def event_times(draw, fmt: str) -> tuple[object, datetime | None]:
    """(the field's JSON value, the UTC time it stands for; None: no time)."""
    if fmt == "iso8601":
        kind = draw(st.integers(0, 9))
        if kind == 0:
            return draw(st.sampled_from(["+10000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z", "99999-01-01", ""])), None
        moment = draw(moments())
        try:
            return _iso(moment), moment.astimezone(UTC)
        except OverflowError:  # an offset past year 1 or 9999
            return _iso(moment), None
    if fmt == PATTERN:
        moment = draw(st.datetimes(datetime(1000, 1, 1), datetime(9999, 12, 31, 23, 59, 59))).replace(microsecond=0)
        return f"{moment.year:04d}-{moment:%m-%d %H:%M:%S}", moment.replace(tzinfo=UTC)
    scale = 1 if fmt == "epoch_seconds" else 1000
    number = draw(
        st.one_of(
            st.integers(-(2**63), 2**63 - 1),
            st.integers(int(FIRST.timestamp()) * scale, int(LAST.timestamp()) * scale),
            st.sampled_from(["NaN", "Infinity", "1e300", "-1e300", "12abc"]),
        )
    )
    if isinstance(number, str):
        return number, None
    micros = number * (1_000_000 // scale)
    return str(number), EPOCH + timedelta(microseconds=micros) if _micros(FIRST) <= micros <= _micros(LAST) else None


def _micros(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def shapes_of(name: str) -> dict:
    """The oracle's reading of a source's schema: its declaration's own YAML."""
    return SHAPES.get(name, dict(SOURCES[name].fields))


def _at(record: dict, path: str) -> object:
    """The value at a path through objects (None where there is none)."""
    for name in path.split("."):
        record = record.get(name) if isinstance(record, dict) else None
    return record


@st.composite
def records(draw, source: Source, shapes: dict) -> tuple[str, dict, datetime | None]:
    time_field = source.event_time.column
    value, moment = draw(event_times(source.event_time.format))
    record = {name: draw(json_scalars) for name in shapes if name != time_field and draw(st.booleans())}
    for path in source.required:  # mostly present, so that the event time decides
        if path != time_field and draw(st.integers(0, 4)):
            *parents, last = path.split(".")
            inner, shape = record, shapes
            for name in parents:  # the objects that hold it, as declared
                inner[name] = inner[name] if isinstance(inner.get(name), dict) else {}
                inner, shape = inner[name], shape[name]
            inner[last] = draw(_typed(shape[last]))
    record[time_field] = value
    return json.dumps(record), record, moment


def _typed(kind: str):
    return {
        "string": st.text(max_size=10),
        "long": st.integers(-(2**63), 2**63 - 1),
        "double": st.floats(allow_nan=False, allow_infinity=False),
    }.get(kind, json_scalars)


def expected_usable(source: Source, shapes: dict, record: dict, moment: datetime | None, now: datetime) -> bool:
    if any(not takes(kind, record.get(name)) for name, kind in shapes.items()):
        return False
    if any(_at(record, path) is None for path in source.required):
        return False
    return moment is not None and moment <= now + timedelta(days=1)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_any_event_time_is_parsed_as_it_is_or_quarantined_with_a_reason(spark, name):
    source, shapes = SOURCES[name], shapes_of(name)

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(records(source, shapes), min_size=LINES, max_size=LINES))
    def holds(drawn) -> None:
        lines = spark.createDataFrame(
            [(line, "f.json") for line, _, _ in drawn], f"{LINE} string, {SOURCE_FILE} string"
        )
        now = datetime.now(UTC)
        parsed = parse_events(lines.coalesce(1), source)  # never raises
        # Event times as microseconds: a quarantined one may be past what Python's datetime holds.
        micros = F.unix_micros(EVENT_TIME).alias("micros")
        rows = parsed.select(*source.fields, QUARANTINE_REASON, micros).orderBy(LINE_NUMBER).collect()
        assert len(rows) == len(drawn)
        for row, (line, record, moment) in zip(rows, drawn, strict=True):
            if row[QUARANTINE_REASON] is not None:
                assert not expected_usable(source, shapes, record, moment, now) or _near_limit(moment, now), line
                continue
            assert expected_usable(source, shapes, record, moment, now), f"{line} was used: {row.micros}"
            assert row.micros == _micros(moment), line
            for field, kind in source.fields.items():
                if kind in ("long", "double", "string", "boolean") and field != source.event_time.column:
                    want = record.get(field)
                    want = float(want) if kind == "double" and want is not None else want
                    got = row[field]
                    assert got == want or (isinstance(got, float) and math.isnan(got)), f"{line}: {field}"

    holds()


def _near_limit(moment: datetime | None, now: datetime) -> bool:
    """A time within seconds of the future limit: the batch's time and the oracle's differ."""
    return moment is not None and abs(moment - (now + timedelta(days=1))) < timedelta(minutes=1)
