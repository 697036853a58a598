"""Pure DataFrame -> DataFrame functions.

Each one runs the same on a batch DataFrame (unit tests, backfills, row accounting) and
on a streaming one (production). None of them reads or writes anything.

The flow for an aggregating pipeline:
    lines (line, source_file)
      -> parse_events        declared fields, event_time, quarantine_reason
      -> valid_events        rows that can be aggregated
      -> window_aggregate    watermark, event-time windows, keys, aggregates
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.spec import Aggregate, PipelineSpec, Source, Window, spark_duration

LINE = "line"
SOURCE_FILE = "source_file"
EVENT_TIME = "event_time"
QUARANTINE_REASON = "quarantine_reason"
_CORRUPT = "__corrupt_record"


def _event_time(raw: Column, kind: str, fmt: str) -> Column:
    """Parse the declared event-time field into a UTC timestamp, or null if it cannot be."""
    if kind in ("timestamp", "date"):
        return raw.cast("timestamp")
    if fmt == "iso8601":
        # Spark's own ISO-8601 reading: 'Z', '+02:00' and '+0200' offsets; no zone means UTC.
        return F.try_to_timestamp(raw)
    if fmt == "epoch_seconds":
        return F.timestamp_seconds(raw.try_cast("double"))
    if fmt == "epoch_millis":
        return F.timestamp_millis(raw.try_cast("long"))
    return F.try_to_timestamp(raw, F.lit(fmt))


def parse_events(lines: DataFrame, source: Source) -> DataFrame:
    """Lines of newline-delimited JSON -> one row per record, with the reason it is unusable.

    Input columns: `line` (the raw text), `source_file`, and any others, which are kept.
    Blank lines are not records and are dropped. Added: every declared field,
    `event_time` and `quarantine_reason` (null for a usable record).
    """
    schema = f"{source.ddl()}, `{_CORRUPT}` string"
    parsed = (
        lines.where(F.trim(LINE) != "")
        .withColumn(
            "_record",
            F.from_json(LINE, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT}),
        )
        .select(*lines.columns, "_record.*")
    )
    time_field = source.event_time.column
    event_time = _event_time(F.col(time_field), source.schema[time_field], source.event_time.format)
    reason = (
        F.when(F.try_parse_json(LINE).isNull(), F.lit("malformed_json"))
        .when(~F.ltrim(LINE).startswith("{"), F.lit("not_a_json_object"))
        .when(F.col(_CORRUPT).isNotNull(), F.lit("wrong_field_type"))
    )
    for field in source.required:
        reason = reason.when(F.col(field).isNull(), F.lit(f"missing_{field}"))
    reason = reason.when(event_time.isNull(), F.lit(f"unparseable_{time_field}"))
    return parsed.withColumn(EVENT_TIME, event_time).withColumn(QUARANTINE_REASON, reason).drop(_CORRUPT)


def valid_events(parsed: DataFrame) -> DataFrame:
    """The records that can be aggregated."""
    return parsed.where(F.col(QUARANTINE_REASON).isNull()).drop(QUARANTINE_REASON)


def quarantined(parsed: DataFrame, *keep: str) -> DataFrame:
    """The records that cannot: where they came from, the raw line and why (plus `keep`)."""
    return parsed.where(F.col(QUARANTINE_REASON).isNotNull()).select(
        SOURCE_FILE, LINE, F.col(QUARANTINE_REASON).alias("reason"), *keep
    )


def _aggregate_column(aggregate: Aggregate) -> Column:
    if aggregate.function == "count":
        return F.count(F.lit(1)).alias(aggregate.name)
    return getattr(F, aggregate.function)(aggregate.column).alias(aggregate.name)


def window_aggregate(events: DataFrame, spec: PipelineSpec) -> DataFrame:
    """Watermarked event-time windows, aggregated per key.

    Output columns: window_start, window_end, the keys, the aggregates, and
    `window_date` when the output is partitioned by it.
    """
    window = F.window(
        EVENT_TIME,
        spark_duration(spec.window.duration_s),
        spark_duration(spec.window.slide_s),
    )
    aggregated = (
        events.withWatermark(EVENT_TIME, spark_duration(spec.watermark_s))
        .groupBy(window.alias("window"), *spec.keys)
        .agg(*(_aggregate_column(a) for a in spec.aggregates))
    )
    table = aggregated.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        *spec.keys,
        *(a.name for a in spec.aggregates),
    )
    if spec.output.partition_by == "window_date":
        table = table.withColumn("window_date", F.to_date("window_start"))
    return table


def latest_window_end(event_time: Column, window: Window) -> Column:
    """The end of the last window an event falls in (Spark's windows start at the epoch)."""
    seconds = F.unix_micros(event_time) / F.lit(1_000_000)
    last_start = F.floor(seconds / window.slide_s) * window.slide_s
    return F.timestamp_seconds(last_start + window.duration_s)


def classify_rows(parsed: DataFrame, window: Window, late_watermark: str) -> DataFrame:
    """Adds `fate`: quarantined, late (dropped by the watermark) or aggregated.

    A stateful aggregation drops an input row when its window ended at or before the
    watermark in force for late rows (`late_watermark`, a timestamp column). An event
    counts as late only when every window it falls in was dropped.
    """
    fate = (
        F.when(F.col(QUARANTINE_REASON).isNotNull(), F.lit("quarantined"))
        .when(latest_window_end(F.col(EVENT_TIME), window) <= F.col(late_watermark), F.lit("late"))
        .otherwise(F.lit("aggregated"))
    )
    return parsed.withColumn("fate", fate)
