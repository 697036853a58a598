"""Pure DataFrame -> DataFrame functions.

Each one runs the same on a batch DataFrame (unit tests, backfills, row accounting) and
on a streaming one (production). None of them reads or writes anything.

The flow (pipeline_table):
    lines (line, source_file)
      -> parse_events        declared fields, event_time, quarantine_reason (+ _rescued_data)
      -> enrich              a dimension's columns (stream-static join), when declared
      -> valid_events        rows that can be used
      -> window_aggregate    watermark, deduplication, event-time windows, keys, aggregates
         or event_rows       each usable event, when the pipeline has no window
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.columns import EVENT_TIME, RESCUED_DATA
from jobs.processors import PROCESSORS, output_ddl
from jobs.spec import Aggregate, Enrichment, PipelineSpec, Source, Window, spark_duration

LINE = "line"
SOURCE_FILE = "source_file"
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

    Fields the schema does not have are ignored, except for an inferred schema whose
    declaration says otherwise: `new_fields: fail` fails the batch (nothing of it is
    committed) naming the fields and the file; `rescue` keeps them, as a JSON object,
    in `_rescued_data`.
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
    new_fields = F.filter(
        F.coalesce(F.json_object_keys(LINE), F.array().cast("array<string>")),
        lambda key: ~key.isin(*source.schema),
    )
    if source.new_fields == "rescue":
        everything = F.from_json(LINE, "map<string,string>")
        rescued = F.map_filter(everything, lambda key, _: ~key.isin(*source.schema))
        parsed = parsed.withColumn(RESCUED_DATA, F.when(F.size(new_fields) > 0, F.to_json(rescued)))
    reason = F.when(F.try_parse_json(LINE).isNull(), F.lit("malformed_json"))
    if source.new_fields == "fail":
        message = F.concat(
            F.lit("new field(s) "),
            F.array_join(new_fields, ", "),
            F.lit(" in "),
            F.col(SOURCE_FILE),
            F.lit(" are not in the recorded schema, and the declaration says new_fields: fail"),
        )
        reason = reason.when(F.size(new_fields) > 0, F.raise_error(message).cast("string"))
    reason = reason.when(~F.ltrim(LINE).startswith("{"), F.lit("not_a_json_object")).when(
        F.col(_CORRUPT).isNotNull(), F.lit("wrong_field_type")
    )
    for field in source.required:
        reason = reason.when(F.col(field).isNull(), F.lit(f"missing_{field}"))
    reason = reason.when(event_time.isNull(), F.lit(f"unparseable_{time_field}"))
    return parsed.withColumn(EVENT_TIME, event_time).withColumn(QUARANTINE_REASON, reason).drop(_CORRUPT)


def enrich(parsed: DataFrame, dimension: DataFrame, enrichment: Enrichment) -> DataFrame:
    """Adds the dimension's columns to each event (a left join on `enrichment.key`).

    An event with no match keeps nulls, or with `unmatched: quarantine` is quarantined
    as no_match_in_<table> (unless it already had a reason). The dimension must have one
    row per key (jobs/dimensions.py checks), so no event is repeated.
    """
    matched = "_matched"
    lookup = dimension.select(
        F.col(enrichment.key).alias("_dimension_key"), *enrichment.columns, F.lit(True).alias(matched)
    )
    joined = parsed.join(lookup, F.col(enrichment.key) == F.col("_dimension_key"), "left").drop("_dimension_key")
    if enrichment.unmatched == "quarantine":
        no_match = F.when(F.col(matched).isNull(), F.lit(f"no_match_in_{enrichment.table}"))
        joined = joined.withColumn(QUARANTINE_REASON, F.coalesce(QUARANTINE_REASON, no_match))
    return joined.drop(matched)


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
    watermarked = events.withWatermark(EVENT_TIME, spark_duration(spec.watermark_s))
    if spec.deduplicate:
        # State per key lasts until the watermark passes its first event time + the delay.
        watermarked = watermarked.dropDuplicatesWithinWatermark(list(spec.deduplicate))
    aggregated = watermarked.groupBy(window.alias("window"), *spec.keys).agg(
        *(_aggregate_column(a) for a in spec.aggregates)
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


def event_rows(events: DataFrame, spec: PipelineSpec) -> DataFrame:
    """Each usable event with the pipeline's output columns (and `event_date` when the
    output is partitioned by it): a stateless pipeline, nothing held between batches."""
    return _with_event_date(events.select(*spec.output_columns), spec, EVENT_TIME)


def _with_event_date(table: DataFrame, spec: PipelineSpec, time_column: str) -> DataFrame:
    """Adds `event_date` (the UTC date of `time_column`) when the output is partitioned by it."""
    if spec.output.partition_by == "event_date":
        return table.withColumn("event_date", F.to_date(time_column))
    return table


def pipeline_table(
    lines: DataFrame,
    spec: PipelineSpec,
    dimension: DataFrame | None = None,
    joined_lines: DataFrame | None = None,
) -> DataFrame:
    """The whole flow from landed lines to output rows, batch or streaming alike.
    `joined_lines` are the second source's, for a stream-stream join."""
    parsed = parse_events(lines, spec.source)
    if spec.enrich is not None:
        parsed = enrich(parsed, dimension, spec.enrich)
    events = valid_events(parsed)
    if spec.join is not None:
        return join_streams(events, valid_events(parse_events(joined_lines, spec.join.source)), spec)
    if spec.process is not None:
        return process_groups(events, spec)
    return window_aggregate(events, spec) if spec.window else event_rows(events, spec)


def join_streams(left_events: DataFrame, right_events: DataFrame, spec: PipelineSpec) -> DataFrame:
    """Right events matched to left events of the same key at most `within` earlier, each
    side watermarked so that Spark can forget events no future event can match. Each
    side's event-time field becomes its parsed timestamp. With `left_outer`, a left event
    that never matched is written with nulls once it is forgotten."""
    join = spec.join
    left_time, right_time = spec.source.event_time.column, join.source.event_time.column

    def side(events: DataFrame, fields: dict, time_field: str, rename: dict) -> DataFrame:
        columns = [F.col(EVENT_TIME if f == time_field else f).alias(rename.get(f, f)) for f in fields]
        return events.select(*columns)

    left = side(left_events, spec.source.schema, left_time, {}).withWatermark(
        left_time, spark_duration(spec.watermark_s)
    )
    right = side(right_events, join.source.schema, right_time, {join.key: "_right_key"}).withWatermark(
        right_time, spark_duration(join.watermark_s)
    )
    condition = (
        (F.col(join.key) == F.col("_right_key"))
        & (F.col(right_time) >= F.col(left_time))
        & F.expr(f"`{right_time}` <= `{left_time}` + INTERVAL {join.within_s} SECONDS")
    )
    joined = left.join(right, condition, join.how).drop("_right_key")
    return _with_event_date(joined.select(*spec.output_columns), spec, left_time)


def process_groups(events: DataFrame, spec: PipelineSpec) -> DataFrame:
    """Each key's events, with the state kept for the key, through the declared processor
    (applyInPandasWithState): what it emits is the output, appended."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    processor = PROCESSORS[spec.process.processor]
    settings = spec.process.settings
    inputs = events.select(*spec.keys, EVENT_TIME, *processor.inputs(settings))
    timeout = GroupStateTimeout.NoTimeout
    if processor.event_time_timeout:
        inputs = inputs.withWatermark(EVENT_TIME, spark_duration(spec.watermark_s))
        timeout = GroupStateTimeout.EventTimeTimeout
    keys_ddl = ", ".join(f"`{key}` {inputs.schema[key].dataType.simpleString()}" for key in spec.keys)
    return inputs.groupBy(*spec.keys).applyInPandasWithState(
        processor.make(settings, list(spec.keys)),
        f"{keys_ddl}, {output_ddl(processor, settings)}",
        processor.state,
        "append",
        timeout,
    )


def latest_window_end(event_time: Column, window: Window) -> Column:
    """The end of the last window an event falls in (Spark's windows start at the epoch)."""
    seconds = F.unix_micros(event_time) / F.lit(1_000_000)
    last_start = F.floor(seconds / window.slide_s) * window.slide_s
    return F.timestamp_seconds(last_start + window.duration_s)


def classify_rows(parsed: DataFrame, spec: PipelineSpec, late_watermark: str) -> DataFrame:
    """Adds `fate`: quarantined, late (dropped by the watermark) or aggregated.

    Rows are judged against the watermark in force for late rows (`late_watermark`, a
    timestamp column). A stateful aggregation drops a row's contribution to a window
    that ended at or before it; an event counts as late only when every window it falls
    in was dropped. Deduplication, when declared, comes first and drops any row whose
    event time is at or before it (what passes is then never late for its windows).
    Rows deduplication drops as repeats stay "aggregated" here: only Spark knows them.
    A processor with event-time timeouts drops events at or before the watermark too.
    """
    if spec.drops_late_events:
        is_late = F.col(EVENT_TIME) <= F.col(late_watermark)
    elif spec.window is None:
        # Event pipelines keep no state; a join's late rows are Spark's count (spark_counts).
        is_late = F.lit(False)
    else:
        is_late = latest_window_end(F.col(EVENT_TIME), spec.window) <= F.col(late_watermark)
    fate = (
        F.when(F.col(QUARANTINE_REASON).isNotNull(), F.lit("quarantined"))
        .when(is_late, F.lit("late"))
        .otherwise(F.lit("aggregated"))
    )
    return parsed.withColumn("fate", fate)
