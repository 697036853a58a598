"""Lines -> typed events, each with the reason it cannot be used (null when it can).

Pure DataFrame functions: the same on a batch DataFrame (tests, backfills, accounting)
and on a streaming one (production).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.columns import (
    BLANK,
    BLOCK_START,
    BROKEN,
    DETAIL,
    EVENT_TIME,
    FIELD,
    FILE_SIZE,
    LINE,
    LINE_NUMBER,
    NEW_FIELDS,
    QUARANTINE_DETAIL,
    QUARANTINE_REASON,
    READ,
    REASON,
    RESCUED,
    RESCUED_DATA,
    SOURCE_FILE,
)
from jobs.declare.parts import Source
from jobs.declare.rules import Rule
from jobs.flow.fields import field
from jobs.flow.rules import checked
from jobs.flow.source import TOO_LARGE_KEPT
from jobs.flow.tally import Tally
from jobs.schema import Array, Kind, Struct, contains, spelled
from jobs.units import duration_words

# An event time is from 0001-01-01 to 9999-12-31 (UTC), what Spark's date functions, Python's
# datetime and Parquet readers agree on; Spark parses years beyond ("+10000-01-01") too.
TIME_RANGE = ("0001-01-01 00:00:00", "9999-12-31 23:59:59.999999")
# Epoch numbers Spark can convert at all (to microseconds in a long): beyond, converting
# would overflow, which fails the query in ANSI mode.
_EPOCH_S = (-9e12, 9e12)
_ISO = "yyyy-MM-dd'T'HH:mm:ss'Z'"


def _event_time(raw: Column, kind: str, fmt: str) -> Column:
    """Parse the declared event-time field into a UTC timestamp, or null if it cannot be."""
    if kind in ("timestamp", "date"):
        return raw.try_cast("timestamp")
    if fmt == "iso8601":
        # Spark's own ISO-8601 reading: 'Z', '+02:00' and '+0200' offsets; no zone means UTC.
        return F.try_to_timestamp(raw)
    if fmt == "epoch_seconds":
        seconds = raw.try_cast("double")  # NaN compares above every number: no time
        return F.when(seconds.between(*_EPOCH_S), F.timestamp_seconds(seconds))
    if fmt == "epoch_millis":
        millis = raw.try_cast("long")
        return F.when(millis.between(int(_EPOCH_S[0] * 1000), int(_EPOCH_S[1] * 1000)), F.timestamp_millis(millis))
    return F.try_to_timestamp(raw, F.lit(fmt))


def _is_time(kind: Kind) -> bool:
    return contains(kind, lambda k: k in ("timestamp", "date"))


def _converted(value: Column, kind: Kind) -> Column:
    """A value as the decoder hands it back (timestamps and dates as text, at any depth)
    -> its declared type; a text that is not one becomes null (`_unconverted` finds it)."""
    if not _is_time(kind):
        return value
    if isinstance(kind, Struct):
        fields = [_converted(value.getField(name), k).alias(name) for name, k in kind.fields]
        return F.when(value.isNotNull(), F.struct(*fields))
    if isinstance(kind, Array):
        return F.transform(value, lambda item: _converted(item, kind.element))
    return value.try_cast(kind)


def _unconverted(value: Column, kind: Kind, path: str) -> list[tuple[Column, Column]]:
    """(found, detail) for each timestamp or date of a field (through objects; an array's
    as one) whose text is not one: what makes a record wrong_field_type after decoding."""
    if isinstance(kind, Struct):
        return [
            found
            for name, k in kind.fields
            if _is_time(k)
            for found in _unconverted(value.getField(name), k, f"{path}.{name}")
        ]
    if isinstance(kind, Array):
        element = kind.element

        def bad(item: Column) -> Column:
            return F.greatest(F.lit(False), *(test for test, _ in _unconverted(item, element, "")))

        found = F.coalesce(F.exists(value, bad), F.lit(False))
        return [(found, F.lit(f"{path}[]: a value is not a {spelled(element)}"))]
    found = value.isNotNull() & value.try_cast(kind).isNull()
    return [(found, F.concat(F.lit(f"{path}: "), value, F.lit(f" is not a {kind}")))]


def decoded(lines: DataFrame, source: Source, tally: Tally | None = None) -> DataFrame:
    """Lines -> the declared fields, read strictly by the JVM's decoder (jobs/flow/functions.py;
    tests/reference/decode.py is its reference), with REASON and DETAIL for a line that cannot
    be read, and each line's number in its part of the file; blank lines dropped. The lines
    read of each file are counted in the tally."""
    from jobs.flow.functions import register_decode

    name = register_decode(lines.sparkSession, source, tally.jvm if tally is not None else None)
    present = set(lines.columns)
    block_start = F.col(BLOCK_START) if BLOCK_START in present else F.lit(0).cast("long")
    file_size = F.col(FILE_SIZE) if FILE_SIZE in present else F.lit(None).cast("long")
    others = [c for c in lines.columns if c not in (LINE, FILE_SIZE)]
    line = F.col(LINE).cast("binary")
    read = lines.select(
        *others,
        line.alias(LINE),
        F.call_function(name, line, F.col(SOURCE_FILE), block_start, file_size).alias(READ),
    )
    fields = [F.col(f"{READ}.{FIELD}{place}").alias(name) for place, name in enumerate(source.fields)]
    added = [LINE_NUMBER, REASON, DETAIL]
    if source.new_fields != "ignore":
        added.append(NEW_FIELDS)
    if source.rescues:
        added.append(RESCUED)
    kept = read.where(~F.col(f"{READ}.{BLANK}"))
    return kept.select(*others, *fields, LINE, *(F.col(f"{READ}.{column}").alias(column) for column in added))


def parse_events(
    lines: DataFrame,
    source: Source,
    tally: Tally | None = None,
    batch_time: Column | None = None,
    rules: tuple[Rule, ...] = (),
) -> DataFrame:
    """Lines of newline-delimited JSON -> one row per record, with the reason it is unusable.

    Input columns: `line` (the raw text), `source_file`, and any others (jobs/flow/source.py
    adds where in the file each line was read from, and the file's size), which are kept.
    Blank lines are not records and are dropped. Added: every declared field,
    `event_time`, `quarantine_reason` (null for a usable record), `quarantine_detail` and
    `line_number` (in the part of the file Spark read; jobs/accounting/lines.py). `line` keeps
    the line as landed for a record that cannot be used, and is null for the others.

    The steps: decode; the reasons a record cannot be read as declared; its event time
    and the reasons that time cannot be used (`batch_time`: see _reasons_of_event_time);
    the row rules (jobs/flow/rules.py: `_rules_broken` says which a usable record breaks,
    a `quarantine` rule gives its reason, a `fail` one fails the batch); the columns kept.
    """
    converted = {name: _converted(F.col(name), kind) for name, kind in source.kinds.items() if _is_time(kind)}
    reason, detail = _reasons_as_declared(source, converted)
    # The event time is parsed once, in a projection of its own: each test below reads the
    # column (an expression repeated in a CASE WHEN's branches would be evaluated again in each).
    parsed = decoded(lines, source, tally).withColumn(EVENT_TIME, _event_time_of(source))
    reason, detail = _reasons_of_event_time(source, reason, detail, batch_time)
    reasoned = parsed.withColumn(QUARANTINE_REASON, reason).withColumn(QUARANTINE_DETAIL, detail)
    if rules:
        typed = reasoned.select(*(converted.get(c, F.col(c)).alias(c) for c in reasoned.columns))
        reasoned, converted = checked(typed, rules), {}
    return _kept_columns(reasoned, source, converted)


def _reasons_as_declared(source: Source, converted: dict[str, Column]) -> tuple[Column, Column]:
    """(reason, detail) of a record that cannot be read as declared, in the order they are
    told: the decoder's, a time that is not one, new fields refused, a required field missing.

    Fields the schema does not have are ignored, except for an inferred schema whose
    declaration says otherwise: `new_fields: fail` fails the batch (nothing of it is
    committed) naming the fields and the file; `rescue` keeps them, as a JSON object, in
    `_rescued_data`."""
    reason = F.when(F.col(REASON).isNotNull(), F.col(REASON))
    detail = F.when(F.col(REASON).isNotNull(), F.col(DETAIL))
    kinds = source.kinds
    for name in converted:
        for unreadable, says in _unconverted(F.col(name), kinds[name], name):
            reason = reason.when(unreadable, F.lit("wrong_field_type"))
            detail = detail.when(unreadable, says)
    if source.new_fields == "fail":
        message = F.concat(
            F.lit("new field(s) "),
            F.array_join(NEW_FIELDS, ", "),
            F.lit(" in "),
            F.col(SOURCE_FILE),
            F.lit(" are not in the recorded schema, and the declaration says new_fields: fail"),
        )
        reason = reason.when(F.size(NEW_FIELDS) > 0, F.raise_error(message).cast("string"))
    for path in source.required:
        reason = reason.when(field(path).isNull(), F.lit(f"missing_{path}"))
    return reason, detail


def _event_time_of(source: Source) -> Column:
    """The declared event-time field as a UTC timestamp (null when it is not one)."""
    time_field = source.event_time.column
    time_kind = spelled(source.kind_at(time_field))
    return _event_time(field(time_field), time_kind, source.event_time.format)


def _reasons_of_event_time(
    source: Source, reason: Column, detail: Column, batch_time: Column | None
) -> tuple[Column, Column]:
    """`reason` and `detail`, then why an event time cannot be used: not one, out of range,
    too far after its batch's time.

    An event time later than `batch_time` plus the declared `max_future` is quarantined as
    event_time_in_future. `batch_time` is the micro-batch's time in a streaming query
    (Spark's `current_timestamp()`, recorded in the offset log and the same when Spark
    redoes the batch); reading a batch again passes the time the offset log recorded."""
    time_field, time_format = source.event_time.column, source.event_time.format
    event_time = F.col(EVENT_TIME)
    as_landed = field(time_field).cast("string")
    # Each test of the event time: (when, reason, what the detail says after "<field>: <value>").
    tests = [
        (event_time.isNull(), f"unparseable_{time_field}", F.lit(f" is not {time_format}")),
        (
            ~event_time.between(*(F.lit(t).cast("timestamp") for t in TIME_RANGE)),
            "event_time_out_of_range",
            F.lit(f" is outside {TIME_RANGE[0][:10]} to {TIME_RANGE[1][:10]}"),
        ),
    ]
    max_future_s = source.event_time.max_future_s
    if max_future_s is not None:
        now = F.current_timestamp() if batch_time is None else batch_time
        latest = F.timestamp_seconds(F.unix_seconds(now) + F.lit(max_future_s))
        after = F.lit(f" is more than {duration_words(max_future_s)} after the batch's time ")
        tests.append((event_time > latest, "event_time_in_future", F.concat(after, F.date_format(now, _ISO))))
    for found, why, says in tests:
        reason = reason.when(found, F.lit(why))
        detail = detail.when(found & as_landed.isNotNull(), F.concat(F.lit(f"{time_field}: "), as_landed, says))
    return reason, detail


def _kept_columns(reasoned: DataFrame, source: Source, converted: dict[str, Column]) -> DataFrame:
    """The record's columns as declared, the line as landed for the quarantine only, what was
    rescued, the event time and the reason; the decoder's own columns left out."""
    internal = (REASON, DETAIL, NEW_FIELDS, RESCUED, EVENT_TIME, QUARANTINE_REASON, QUARANTINE_DETAIL)
    # The line as landed, for the quarantine only: bytes that are not UTF-8 in base64, rather
    # than replaced; of a line over the size limit, its start (the whole line stays in its
    # file, at its line number).
    in_base64 = F.regexp_replace(F.base64(LINE), r"\r\n", "")  # Spark's base64 breaks lines at 76
    line = (
        F.when(F.col(QUARANTINE_REASON).isNull(), F.lit(None).cast("string"))
        .when(F.col(REASON) == "invalid_encoding", in_base64)
        .when(F.col(REASON) == "record_too_large", F.substring(LINE, 1, TOO_LARGE_KEPT).cast("string"))
        .otherwise(F.col(LINE).cast("string"))
    )
    kept = [converted.get(c, line if c == LINE else F.col(c)).alias(c) for c in reasoned.columns if c not in internal]
    rescued = [F.col(RESCUED).alias(RESCUED_DATA)] if source.rescues else []
    return reasoned.select(*kept, *rescued, EVENT_TIME, QUARANTINE_REASON, QUARANTINE_DETAIL)


def usable(parsed: DataFrame, keep: Column | None = None) -> DataFrame:
    """The records a pattern can use (`keep`: the same test, jobs/flow/tally.py `counted`,
    that also counts every record on its way)."""
    keep = F.col(QUARANTINE_REASON).isNull() if keep is None else keep
    return parsed.where(keep).drop(QUARANTINE_REASON, QUARANTINE_DETAIL, BROKEN)
