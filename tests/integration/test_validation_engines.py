"""The two validation engines agree: every shipped suite gives the same verdicts and counts
on Great Expectations' pandas engine (a small output, read with pyarrow: no Spark job) as on
its Spark engine, over the same Parquet files: hostile values (nulls, NaN, duplicates, strings
a regex reads differently in Java and Python, bounds), tidy values, and no rows at all."""

from __future__ import annotations

import math
import random
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from jobs import declare
from jobs.flow.query import output_schema
from jobs.validate import gx
from jobs.validate.small_table import footer_schema, read_files
from jobs.validate.suite import load_suite
from jobs.validate.validation import with_window_length

T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)
# Strings a regex, a set or a null check may read differently: line ends ($ before a final
# newline), empty, slashes, non-ASCII, upper and lower case, look-alikes of set members.
HOSTILE_STRINGS = [
    None,
    "",
    "a/b",
    "a/b/c",
    "/",
    "a/",
    "/b",
    "a/b\n",
    "a\nb/c",
    "ä/ö",
    "\u2044/x",
    "NORMAL",
    "normal",
    "WARNING ",
    "free",
    "pro",
    "team",
    "Team",
    "null",
    "None",
    "<b>x</b>/y",
    "a\\/b",
    "%",
    "_",
    "*",
]
HOSTILE_NUMBERS = [None, -1, 0, 1, 2, 59, 60, 61, 300, 3600, 2**40]
HOSTILE_DOUBLES = [None, -0.5, 0.0, 1.5, 40.0, 1e300, math.nan, math.inf, -math.inf]


def _value(field: T.StructField, rng: random.Random, row: int, tidy: bool):
    value = _any_value(field.dataType, rng, row, tidy)
    while value is None and not field.nullable:
        value = _any_value(field.dataType, rng, row, tidy)
    return value


def _any_value(kind: T.DataType, rng: random.Random, row: int, tidy: bool):
    if isinstance(kind, T.StringType):
        return f"owner{row % 7}/repo{row}" if tidy else rng.choice(HOSTILE_STRINGS)
    if isinstance(kind, T.IntegralType):
        fits = (
            HOSTILE_NUMBERS if isinstance(kind, T.LongType) else [n for n in HOSTILE_NUMBERS if n is None or n < 2**31]
        )
        return row + 1 if tidy else rng.choice(fits)
    if isinstance(kind, T.DecimalType):
        return Decimal(row + 1) if tidy else rng.choice([None, Decimal(-1), Decimal(0), Decimal(40), Decimal(10**20)])
    if isinstance(kind, T.FractionalType):
        return float(row) + 0.5 if tidy else rng.choice(HOSTILE_DOUBLES)
    if isinstance(kind, T.BooleanType):
        return row % 2 == 0 if tidy else rng.choice([None, True, False])
    if isinstance(kind, T.TimestampType):
        return (
            T0 + timedelta(minutes=row)
            if tidy
            else rng.choice([None, T0, T0 + timedelta(seconds=61), T0 - timedelta(days=400)])
        )
    if isinstance(kind, T.DateType):
        return date(2023, 7, 30) if tidy else rng.choice([None, date(2023, 7, 30), date(1970, 1, 1)])
    return None  # arrays, maps, structs: no shipped expectation reads them


def rows(schema: T.StructType, count: int, tidy: bool, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    made = [tuple(_value(f, rng, i, tidy) for f in schema.fields) for i in range(count)]
    names = schema.fieldNames()
    if "window_start" in names and "window_end" in names and tidy:  # windows of one length
        start, end = names.index("window_start"), names.index("window_end")
        made = [(*r[:end], r[start] + timedelta(minutes=1), *r[end + 1 :]) for r in made]
    return made + made[:3]  # repeated rows: what a uniqueness check is for


def _checks(results) -> list[tuple]:
    return [(c.name, c.success, c.unexpected_count, c.element_count, _same(c.observed)) for c in results]


def _same(observed):
    return round(observed, 9) if isinstance(observed, float) else observed


@pytest.mark.parametrize("name", sorted(declare.load_all()))
def test_every_shipped_suite_gives_the_same_verdicts_and_counts_on_both_engines(spark, tmp_path, name):
    pipeline = declare.load(name)
    if pipeline.source.infer_schema:  # the fields its first run would infer from the sample events
        fields = {"event_id": "string", "user_id": "string", "event": "string", "eventtimestamp": "string"}
        pipeline = pipeline.model_copy(update={"source": pipeline.source.with_recorded_fields(fields)})
    suite = load_suite(pipeline)
    schema = output_schema(spark, pipeline)
    partition = pipeline.output.partition_by
    for label, count, tidy in (("hostile", 40, False), ("tidy", 20, True), ("empty", 0, True)):
        output = str(tmp_path / name / label)
        frame = spark.createDataFrame(rows(schema, count, tidy, seed=len(name)), schema).coalesce(1)
        (frame.write.partitionBy(partition) if partition else frame.write).parquet(output)
        files = sorted(str(p) for p in (tmp_path / name / label).rglob("*.parquet"))

        on_spark, _ = gx.run_checkpoint(
            with_window_length(spark.read.schema(schema).parquet(output)),
            name,
            suite,
            str(tmp_path / "gx"),
            tmp_path / "site",
            f"spark-{label}",
            True,
        )
        # No file (no rows in a partitioned table): the columns as Delta's log would give them.
        written = footer_schema(files[0], partition) if files else to_arrow_schema(schema, timezone="UTC")
        on_pandas, _ = gx.run_checkpoint(
            with_window_length(read_files(output, files, written, partition)),
            name,
            suite,
            str(tmp_path / "gx"),
            tmp_path / "site",
            f"pandas-{label}",
            True,
        )

        assert _checks(on_pandas) == _checks(on_spark), label
