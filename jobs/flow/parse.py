"""Lines -> typed events, each with the reason it cannot be used (null when it can).

Pure DataFrame functions: the same on a batch DataFrame (tests, backfills, accounting)
and on a streaming one (production).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.columns import EVENT_TIME, LINE, QUARANTINE_REASON, RESCUED_DATA, SOURCE_FILE
from jobs.declare.parts import Source

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
    fields = source.fields
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
    event_time = _event_time(F.col(time_field), fields[time_field], source.event_time.format)
    new_fields = F.filter(
        F.coalesce(F.json_object_keys(LINE), F.array().cast("array<string>")),
        lambda key: ~key.isin(*fields),
    )
    if source.new_fields == "rescue":
        everything = F.from_json(LINE, "map<string,string>")
        rescued = F.map_filter(everything, lambda key, _: ~key.isin(*fields))
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


def usable(parsed: DataFrame) -> DataFrame:
    """The records a pattern can use."""
    return parsed.where(F.col(QUARANTINE_REASON).isNull()).drop(QUARANTINE_REASON)


def quarantined(parsed: DataFrame, *keep: str) -> DataFrame:
    """The records it cannot: where they came from, the raw line and why (plus `keep`)."""
    return parsed.where(F.col(QUARANTINE_REASON).isNotNull()).select(
        SOURCE_FILE, LINE, F.col(QUARANTINE_REASON).alias("reason"), *keep
    )
