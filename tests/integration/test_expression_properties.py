"""Differential property test of a declaration's expressions (issue 72): generated window
pipelines (computed columns, a `where`, keys and aggregates over them, tumbling or sliding
windows) over generated events landed in several files, one run each. The product's table
equals what Spark batch computes over the same landed lines with the same SQL, written here
without the product's code: each line parsed with `from_json`, the columns and `where`
applied, every (row, window) pair dropped whose window ended at or before the watermark of
the run that read the row (the newest event time of the files before, less the delay), and
only the windows the final watermark closed kept. Each run's report balances, and its
filtered rows are the rows the `where` does not keep.
`JOBS_HYPOTHESIS_SPARK_EXAMPLES` sets the number of pipelines tried (default 4).
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs import declare
from jobs.lake.layout import Locations
from tests.helpers import land_in_order, run_pipeline

EXAMPLES = int(os.environ.get("JOBS_HYPOTHESIS_SPARK_EXAMPLES", "4"))
SCHEMA = {"u": "string", "n": "long", "x": "double", "tag": "string", "ts": "string"}
SPARK_SCHEMA = "u string, n long, x double, tag string, ts string"
T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)
DELAY_S = 120

# Computed columns, each over the source's fields: name -> (expression, can it be a key).
COLUMNS = {
    "who": ("lower(u)", True),
    "bucket": ("n % 3", True),
    "doubled": ("x * 2", False),
    "tag_length": ("length(tag)", True),
    "big": ("n > 4", False),
}
WHERES = ["n % 2 = 0", "tag <> 'b'", "x > 1.5 OR u = 'a'", "coalesce(tag, 'none') <> 'none'"]


def _aggregates(columns: list[str]):
    """Aggregates over fields and the computed columns chosen: (declared, the batch's SQL)."""
    numbers = ["n", "x", *(c for c in columns if c in ("bucket", "doubled", "tag_length"))]
    menu = [
        st.just(({"function": "count"}, "count(1)")),
        st.sampled_from(numbers).map(lambda c: ({"function": "max", "column": c}, f"max({c})")),
        st.sampled_from(numbers).map(lambda c: ({"function": "min", "column": c}, f"min({c})")),
        st.just(({"function": "sum", "column": "x"}, "sum(x)")),
        st.just(({"function": "avg", "column": "x"}, "avg(x)")),
        st.sampled_from(["u", "tag", *columns]).map(
            lambda c: ({"function": "approx_count_distinct", "column": c}, f"approx_count_distinct({c})")
        ),
        st.just(({"function": "stddev", "column": "x"}, "stddev(x)")),
        st.just(({"function": "max_by", "column": "u", "by": "n"}, "max_by(u, n)")),
        st.just(({"expression": "sum(n * x)"}, "sum(n * x)")),
    ]
    if "big" in columns:
        menu.append(st.just(({"function": "count_if", "column": "big"}, "count_if(big)")))
    return st.lists(st.one_of(menu), min_size=1, max_size=3)


@st.composite
def pipelines(draw) -> tuple[dict, dict[str, str]]:
    """A declaration, and the batch's SQL of each aggregate by its name."""
    columns = draw(st.lists(st.sampled_from(sorted(COLUMNS)), max_size=3, unique=True))
    keys = draw(
        st.lists(st.sampled_from(["u", "tag", *(c for c in columns if COLUMNS[c][1])]), max_size=2, unique=True)
    )
    aggregates = draw(_aggregates(columns))
    duration = draw(st.sampled_from([60, 120]))
    window = {"duration": f"{duration} seconds"}
    if draw(st.booleans()):
        window["slide"] = f"{duration // 2} seconds"
    raw = {
        "name": "generated",
        "source": {"format": "json", "schema": SCHEMA, "event_time": {"column": "ts"}},
        "columns": {name: COLUMNS[name][0] for name in columns},
        "watermark": f"{DELAY_S} seconds",
        "window": window,
        "keys": keys,
        "aggregates": [{"name": f"a{i}", **declared} for i, (declared, _) in enumerate(aggregates)],
        "output": {"format": "parquet"},
    }
    if where := draw(st.one_of(st.none(), st.sampled_from(WHERES))):
        raw["where"] = where
    return raw, {f"a{i}": sql for i, (_, sql) in enumerate(aggregates)}


def _event(draw) -> str:
    if draw(st.integers(0, 15)) == 0:
        return "{not json"  # quarantined: never moves the watermark
    record = {
        "u": draw(st.sampled_from(["a", "A", "b", None])),
        "n": draw(st.integers(0, 9)),
        "x": draw(st.sampled_from([0.5, 1.5, 2.25, -3.0])),
        "tag": draw(st.sampled_from(["a", "b", None])),
        "ts": (T0 + timedelta(seconds=draw(st.integers(0, 900)))).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return json.dumps(record)


@st.composite
def landed(draw) -> list[list[str]]:
    """Files in landing order, one run each: later files mostly later in event time, some rows late."""
    return [[_event(draw) for _ in range(draw(st.integers(1, 12)))] for _ in range(draw(st.integers(1, 3)))]


def _expected(spark, raw: dict, sql: dict[str, str], files: list[list[str]]) -> tuple[list[tuple], list[int]]:
    """The table by Spark batch, and each file's filtered rows, from the lines alone."""
    from pyspark.sql import functions as F

    rows = [(line, k) for k, lines in enumerate(files) for line in lines]
    lines = spark.createDataFrame(rows, "line string, file int")
    parsed = lines.select(F.from_json("line", SPARK_SCHEMA).alias("e"), "file").select("e.*", "file")
    parsed = parsed.withColumn("t", F.to_timestamp("ts")).where("t IS NOT NULL")  # a broken line: all null
    for name, expression in raw["columns"].items():
        parsed = parsed.withColumn(name, F.expr(expression))
    kept = F.coalesce(F.expr(raw["where"]), F.lit(False)) if "where" in raw else F.lit(True)
    parsed = parsed.withColumn("kept", kept)
    newest = {r.file: r.newest for r in parsed.groupBy("file").agg(F.max("t").alias("newest")).collect()}
    # The watermark each file's run drops rows against, and the last one (µs since the epoch).
    watermarks, newest_yet = [], None
    for k in range(len(files)):
        watermarks.append(_micros(newest_yet) - DELAY_S * 10**6 if newest_yet else 0)
        newest_yet = max(filter(None, [newest_yet, newest.get(k)]), default=None)
    final = _micros(newest_yet) - DELAY_S * 10**6 if newest_yet else 0
    filtered = [parsed.where(F.col("file") == k).where(~F.col("kept")).count() for k in range(len(files))]

    window = raw["window"]
    windowed = parsed.where("kept").withColumn("w", F.window("t", window["duration"], window.get("slide")))
    late_at = F.element_at(F.array(*(F.lit(w) for w in watermarks)), F.col("file") + 1)
    in_time = windowed.where(F.unix_micros(F.col("w.end")) > late_at)
    groups = ["w", *raw["keys"]]
    table = in_time.groupBy(*groups).agg(*(F.expr(sql[a["name"]]).alias(a["name"]) for a in raw["aggregates"]))
    closed = table.where(F.unix_micros(F.col("w.end")) <= F.lit(final))
    names = ["w.start", "w.end", *raw["keys"], *(a["name"] for a in raw["aggregates"])]
    return sorted(_rounded(r) for r in closed.select(*names).collect()), filtered


def _micros(moment: datetime) -> int:
    return int(moment.replace(tzinfo=UTC).timestamp()) * 10**6


def _rounded(row) -> tuple:
    """Doubles to 9 significant digits (sums in another order), None sorted first."""
    values = (f"{v:.9g}" if isinstance(v, float) and math.isfinite(v) else v for v in row)
    return tuple((v is not None, v if v is not None else "") for v in values)


def test_the_table_is_spark_batch_over_the_lines_less_the_late_rows(spark, tmp_path_factory):
    from pyspark.sql import functions as F

    tried = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(pipelines(), landed())
    def agrees(declared, files):
        raw, sql = declared
        pipeline = declare.from_mapping(raw)
        locations = Locations.resolve(pipeline.name, root=str(tmp_path_factory.mktemp("expressions") / "root"))
        reports = []
        for k, lines in enumerate(files):
            land_in_order(locations.landing, {f"part-{k}.json": lines})
            reports.append(run_pipeline(spark, pipeline, locations))
        ansi = spark.conf.get("spark.sql.ansi.enabled")
        spark.conf.set("spark.sql.ansi.enabled", "false")  # as the product analyses expressions
        try:
            expected, filtered = _expected(spark, raw, sql, files)
        finally:
            spark.conf.set("spark.sql.ansi.enabled", ansi)
        columns = ["window_start", "window_end", *raw["keys"], *(a["name"] for a in raw["aggregates"])]
        written = spark.read.parquet(locations.output).select(*(F.col(f"`{c}`") for c in columns)).collect()
        assert sorted(_rounded(r) for r in written) == expected, json.dumps(raw)
        assert [r.filtered_rows for r in reports] == filtered, json.dumps(raw)
        assert all(r.rows_balance for r in reports)
        tried.append(bool(expected))

    agrees()
    assert any(tried), "no generated pipeline wrote a window: the property says nothing"
