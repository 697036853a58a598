"""What a pipeline declaration may say, validated on load.

A declaration is a YAML file in `jobs/pipelines/`. This module only reads and checks
them: it imports no Spark, so the Airflow DAG factory can use it at parse time.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from jobs.columns import EVENT_TIME, RESCUED_DATA
from jobs.processors import PROCESSORS, output_columns

PIPELINES_DIR = Path(__file__).parent / "pipelines"

SOURCE_FORMATS = ("json",)
FIELD_TYPES = ("string", "long", "int", "double", "boolean", "timestamp", "date")
AGGREGATE_FUNCTIONS = ("count", "sum", "avg", "min", "max")
OUTPUT_FORMATS = ("parquet",)
NEW_FIELDS = ("fail", "ignore", "rescue")  # what an inferred-schema source does with fields it has not seen
DIMENSION_FORMATS = ("csv", "parquet")
UNMATCHED = ("keep", "quarantine")
# Event time formats: ISO-8601 (a trailing Z or an offset; no zone means UTC), epoch
# numbers, or a Spark datetime pattern such as "yyyy-MM-dd HH:mm:ss".
EPOCH_FORMATS = ("epoch_seconds", "epoch_millis")

_DURATION = re.compile(r"^\s*(\d+)\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|h|days?|d)\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SpecError(ValueError):
    """A declaration is missing something or says something the runner cannot do."""


def parse_duration_s(text: str, what: str) -> int:
    """'5 minutes' (or '5m', '5 min') -> 300. Whole seconds, minutes, hours or days."""
    match = _DURATION.match(str(text))
    if not match:
        raise SpecError(f"{what}: {text!r} is not a duration like '30 seconds', '5 minutes' or '1 hour'")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)[0]]
    if seconds <= 0:
        raise SpecError(f"{what}: {text!r} must be longer than zero")
    return seconds


def spark_duration(seconds: int) -> str:
    """A duration string Spark parses the same way everywhere ('300 seconds')."""
    return f"{seconds} seconds"


@dataclass(frozen=True)
class EventTime:
    column: str
    format: str = "iso8601"


@dataclass(frozen=True)
class Source:
    format: str
    schema: dict[str, str]  # empty until inferred, when infer_schema
    required: tuple[str, ...]
    event_time: EventTime
    # `schema: infer`: inferred from what has landed by the first run, then recorded with
    # the checkpoint (jobs/inference.py); fields that appear later are handled by new_fields.
    infer_schema: bool = False
    new_fields: str = "ignore"
    # With a stream-stream join each source lands in a folder of its own: <landing>/<name>/.
    name: str | None = None

    def ddl(self) -> str:
        return ", ".join(f"`{name}` {kind}" for name, kind in self.schema.items())


@dataclass(frozen=True)
class Enrichment:
    """A stream-static join: each event gets columns of a dimension table, read every batch."""

    table: str  # a name, for messages and the quarantine reason no_match_in_<table>
    path: str  # relative to <root>/dimensions/, or a full path or s3a:// URI
    format: str
    key: str  # the event field and the dimension column that match
    columns: tuple[str, ...]
    unmatched: str  # keep (with nulls) or quarantine


@dataclass(frozen=True)
class StreamJoin:
    """A stream-stream join: events of the pipeline's source with those of a second one.

    A right event matches a left event with the same key whose event time is at most
    `within_s` before its own (right time in [left time, left time + within]). Both sides
    are watermarked, so Spark can forget events that can no longer match.
    """

    source: Source  # the right side
    watermark_s: int
    key: str
    within_s: int
    how: str  # inner, or left_outer: left events that never matched, with nulls, once forgotten


JOIN_TYPES = ("inner", "left_outer")


@dataclass(frozen=True)
class Process:
    """Arbitrary stateful processing: a processor of jobs/processors.py, per key."""

    processor: str
    settings: dict[str, Any]  # the processor's defaults, overridden by the declaration


@dataclass(frozen=True)
class Aggregate:
    name: str
    function: str
    column: str | None = None


@dataclass(frozen=True)
class Window:
    duration_s: int
    slide_s: int

    @property
    def is_tumbling(self) -> bool:
        return self.duration_s == self.slide_s


@dataclass(frozen=True)
class Output:
    format: str
    partition_by: str | None


@dataclass(frozen=True)
class Orchestration:
    """How Airflow runs the pipeline's DAG (the declaration's optional `airflow:` block)."""

    retries: int = 2
    retry_delay_s: int = 60  # doubled on each retry, up to max_retry_delay_s
    max_retry_delay_s: int = 1800
    timeout_s: int = 3600  # a run that takes longer is stopped, and retried from its checkpoint


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    description: str
    source: Source
    watermark_s: int | None  # None: the pipeline keeps no state
    window: Window | None  # None: the pipeline writes each usable event (no aggregation)
    keys: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]
    output: Output
    schedule: str | None = None
    # Records with equal values in these columns count once (the first to arrive), while
    # the watermark has not passed the first one's event time by the watermark delay.
    deduplicate: tuple[str, ...] = ()
    enrich: Enrichment | None = None
    process: Process | None = None  # instead of a window: a stateful processor per key
    join: StreamJoin | None = None  # instead of a window: a second stream to join with
    orchestration: Orchestration = Orchestration()
    # Fixed by the first run: Spark stores the number of state partitions in the checkpoint.
    state_partitions: int = 4
    path: Path | None = field(default=None, compare=False)

    @property
    def aggregation_operator(self) -> int:
        """The aggregation's stateful operator id: deduplication, when declared, comes first."""
        return self.stateful_operators - 1

    @property
    def sources(self) -> list[Source]:
        """The streams the query reads, in the order of their checkpoint ids (sources/0, 1)."""
        return [self.source, self.join.source] if self.join else [self.source]

    @property
    def stateful_operators(self) -> int:
        """How many stateful operators the query has (their ids are 0, 1, ...)."""
        if self.window is not None:
            return 2 if self.deduplicate else 1
        return 1 if self.process is not None or self.join is not None else 0

    @property
    def spark_counts(self) -> list[str]:
        """What only Spark counts for this query, kept from each batch's progress."""
        return ["late_rows_dropped"] * bool(self.join) + ["duplicates_dropped"] * bool(self.deduplicate)

    @property
    def drops_late_events(self) -> bool:
        """The accounting counts events at or before the watermark as late, whole (not
        window by window). A join drops them too, but Spark counts those (spark_counts)."""
        if self.process is not None:
            return PROCESSORS[self.process.processor].event_time_timeout
        return bool(self.deduplicate)

    @property
    def output_columns(self) -> list[str]:
        if self.join is not None:
            right = [f for f in self.join.source.schema if f != self.join.key]
            return [*self.source.schema, *right]
        if self.process is not None:
            return output_columns(PROCESSORS[self.process.processor], self.process.settings, list(self.keys))
        if self.window is not None:
            return ["window_start", "window_end", *self.keys, *(a.name for a in self.aggregates)]
        # An inferred schema is known once recorded; until then, the fields the declaration names.
        fields = list(self.source.schema) or list(self.source.required)
        rescued = [RESCUED_DATA] if self.source.new_fields == "rescue" else []
        return [EVENT_TIME, *fields, *(self.enrich.columns if self.enrich else ()), *rescued]

    def state_contract(self) -> dict[str, Any]:
        """The parts of the declaration a checkpoint cannot outlive a change of.

        Spark keeps aggregation state keyed by window and keys, with one slot per
        aggregate, and the file sink's log lives with the output: change any of these
        and the checkpoint no longer describes the query.
        """
        contract = {
            "source_format": self.source.format,
            "event_time_column": self.source.event_time.column,
            "window_duration_s": self.window.duration_s if self.window else None,
            "window_slide_s": self.window.slide_s if self.window else None,
            "keys": list(self.keys),
            "aggregates": [asdict(a) for a in self.aggregates],
            "output_format": self.output.format,
            "partition_by": self.output.partition_by,
            "state_partitions": self.state_partitions,
        }
        # Absent when not declared, so checkpoints started before these existed still match.
        if self.deduplicate:
            contract["deduplicate"] = list(self.deduplicate)
        if self.join:
            contract["join"] = {"source": self.join.source.name, "key": self.join.key, "how": self.join.how}
        if self.process:  # the processor's state layout; its settings may change
            contract["processor"] = self.process.processor
        if self.enrich:  # the join keeps no state: only the columns it adds are fixed
            contract["enrich_columns"] = list(self.enrich.columns)
        if self.source.infer_schema:
            # fail and ignore may be switched (e.g. to get past new fields); rescue adds a column.
            contract["infer_schema"] = True
            contract["rescued_data"] = self.source.new_fields == "rescue"
        return contract


def _require(mapping: dict, key: str, where: str) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise SpecError(f"{where}: missing '{key}'")
    return mapping[key]


def _check_keys(mapping: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(mapping) - allowed)
    if unknown:
        raise SpecError(f"{where}: unknown setting(s) {unknown}; allowed: {sorted(allowed)}")


def parse_spec(raw: dict, where: str = "declaration") -> PipelineSpec:
    """Validate a declaration (already parsed from YAML) and build a PipelineSpec."""
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: a declaration is a mapping of settings")
    _check_keys(
        raw,
        {
            "name",
            "description",
            "schedule",
            "source",
            "watermark",
            "window",
            "keys",
            "deduplicate",
            "aggregates",
            "output",
            "state_partitions",
            "airflow",
            "enrich",
            "process",
            "join",
        },
        where,
    )
    name = _require(raw, "name", where)
    if not isinstance(name, str) or not _NAME.match(name):
        raise SpecError(f"{where}: name {name!r} must be lower-case letters, digits and '_'")
    where = f"pipeline '{name}'"

    source = _source(_require(raw, "source", where), f"{where} source")
    required = source.required
    enrich = _enrichment(raw["enrich"], source, f"{where} enrich") if raw.get("enrich") else None
    # What events hold before aggregation: the source's fields and the dimension's. An
    # inferred schema is not known yet: the first run checks the names against it.
    event_columns = {*source.schema, *(enrich.columns if enrich else ())}

    def known(column: str) -> bool:
        return source.infer_schema or column in event_columns

    window = _window(raw["window"], f"{where} window") if raw.get("window") is not None else None
    process = _process(raw["process"], f"{where} process") if raw.get("process") is not None else None
    join = _join(raw["join"], source, f"{where} join") if raw.get("join") is not None else None
    if sum(x is not None for x in (window, process, join)) > 1:
        raise SpecError(f"{where}: declare one of 'window' (aggregates), 'process' (a processor) or 'join'")
    if join and (enrich or raw.get("keys") or raw.get("deduplicate")):
        raise SpecError(f"{where}: a join writes the joined events; leave out keys, deduplicate and enrich")
    needs_watermark = (
        window is not None or raw.get("deduplicate") or (process and PROCESSORS[process.processor].event_time_timeout)
    )
    watermark_s = None
    if raw.get("watermark") is not None:
        watermark_s = parse_duration_s(raw["watermark"], f"{where} watermark")
    elif needs_watermark:
        raise SpecError(
            f"{where}: missing 'watermark' (windows, deduplication and timeouts keep state until it passes)"
        )

    if window is None:
        for setting in ("keys", "aggregates") if process is None else ("aggregates",):
            if raw.get(setting):
                raise SpecError(f"{where}: '{setting}' needs a 'window'; without one, each usable event is written")
    keys = tuple(_require(raw, "keys", where)) if window or process else ()
    if process and not keys:
        raise SpecError(f"{where}: a process needs 'keys': the processor keeps state per key")
    for column in PROCESSORS[process.processor].inputs(process.settings) if process else []:
        if not known(column):
            raise SpecError(f"{where}: processor {process.processor} reads {column!r}, which is not an event field")
    for key in keys:
        if not known(key):
            raise SpecError(f"{where}: key {key!r} is not in the source schema")

    deduplicate = raw.get("deduplicate") or []
    if not isinstance(deduplicate, list) or not all(isinstance(c, str) for c in deduplicate):
        raise SpecError(f"{where}: deduplicate is a list of source fields, e.g. [event_id]")
    if deduplicate and window is None:
        raise SpecError(f"{where}: deduplicate needs a 'window' (it is bounded by the aggregation's watermark)")
    for column in deduplicate:
        if column not in required:
            raise SpecError(f"{where}: deduplicate field {column!r} must be a required source field")

    aggregates = []
    for i, raw_agg in enumerate((_require(raw, "aggregates", where) or []) if window else []):
        agg_where = f"{where} aggregate #{i + 1}"
        _check_keys(raw_agg, {"name", "function", "column"}, agg_where)
        agg = Aggregate(
            _require(raw_agg, "name", agg_where), _require(raw_agg, "function", agg_where), raw_agg.get("column")
        )
        if not _NAME.match(agg.name):
            raise SpecError(f"{agg_where}: name {agg.name!r} must be lower-case letters, digits and '_'")
        if agg.function not in AGGREGATE_FUNCTIONS:
            raise SpecError(f"{agg_where}: function {agg.function!r} is not one of {AGGREGATE_FUNCTIONS}")
        if agg.function != "count" and agg.column is None:
            raise SpecError(f"{agg_where}: {agg.function} needs a 'column'")
        if agg.column is not None and not known(agg.column):
            raise SpecError(f"{agg_where}: column {agg.column!r} is not in the source schema")
        aggregates.append(agg)
    if window and not aggregates:
        raise SpecError(f"{where}: declare at least one aggregate")
    columns = ["window_start", "window_end", *keys, *(a.name for a in aggregates)]
    if window and len(set(columns)) != len(columns):
        raise SpecError(f"{where}: output column names collide: {columns}")

    raw_output = _require(raw, "output", where)
    _check_keys(raw_output, {"format", "partition_by"}, f"{where} output")
    output = Output(raw_output.get("format", "parquet"), raw_output.get("partition_by"))
    if output.format not in OUTPUT_FORMATS:
        raise SpecError(f"{where}: output format {output.format!r} is not one of {OUTPUT_FORMATS}")
    partition_column, meaning = ("window_date", "window_start") if window else ("event_date", "event_time")
    if process and output.partition_by:
        raise SpecError(f"{where}: a processor's output is not partitioned; leave out partition_by")
    if output.partition_by not in (None, partition_column):
        raise SpecError(f"{where}: output partition_by may only be '{partition_column}' (the UTC date of {meaning})")

    state_partitions = raw.get("state_partitions", 4)
    if not isinstance(state_partitions, int) or state_partitions < 1:
        raise SpecError(f"{where}: state_partitions must be a positive whole number")

    return PipelineSpec(
        orchestration=_orchestration(raw.get("airflow") or {}, f"{where} airflow"),
        name=name,
        description=str(raw.get("description", "")).strip(),
        source=source,
        watermark_s=watermark_s,
        window=window,
        keys=keys,
        aggregates=tuple(aggregates),
        output=output,
        schedule=raw.get("schedule"),
        deduplicate=tuple(deduplicate),
        enrich=enrich,
        process=process,
        join=join,
        state_partitions=state_partitions,
    )


def _join(raw: dict, left: Source, where: str) -> StreamJoin:
    _check_keys(raw, {"source", "watermark", "key", "within", "how"}, where)
    right = _source(_require(raw, "source", where), f"{where} source")
    join = StreamJoin(
        source=right,
        watermark_s=parse_duration_s(_require(raw, "watermark", where), f"{where} watermark"),
        key=_require(raw, "key", where),
        within_s=parse_duration_s(_require(raw, "within", where), f"{where} within"),
        how=raw.get("how", "inner"),
    )
    if join.how not in JOIN_TYPES:
        raise SpecError(f"{where}: how {join.how!r}: use one of {', '.join(JOIN_TYPES)}")
    if left.infer_schema or right.infer_schema:
        raise SpecError(f"{where}: both sides of a join need a declared schema")
    if not left.name or not right.name or left.name == right.name:
        raise SpecError(f"{where}: give each source a different 'name': its folder under the landing location")
    for side in (left, right):
        if join.key not in side.schema:
            raise SpecError(f"{where}: key {join.key!r} is not in the {side.name} schema")
    shared = sorted((set(left.schema) & set(right.schema)) - {join.key})
    if shared:
        raise SpecError(f"{where}: fields {shared} are in both sources; the output keeps one column per name")
    return join


def _source(raw_source: dict, where: str) -> Source:
    _check_keys(raw_source, {"name", "format", "schema", "required", "event_time", "new_fields"}, where)
    source_format = _require(raw_source, "format", where)
    if source_format not in SOURCE_FORMATS:
        raise SpecError(f"{where}: source format {source_format!r} is not one of {SOURCE_FORMATS}")
    schema = _require(raw_source, "schema", where)
    infer = schema == "infer"
    if infer:
        schema = {}
    elif not isinstance(schema, dict) or not schema:
        raise SpecError(f"{where}: schema must map each field name to a type, or be 'infer'")
    for column, kind in schema.items():
        if not _COLUMN.match(str(column)):
            raise SpecError(f"{where}: schema field {column!r} is not a plain column name")
        if kind not in FIELD_TYPES:
            raise SpecError(f"{where}: schema field {column!r} has type {kind!r}; use one of {FIELD_TYPES}")
    new_fields = raw_source.get("new_fields", "ignore")
    if new_fields not in NEW_FIELDS:
        raise SpecError(f"{where}: new_fields {new_fields!r}: use one of {', '.join(NEW_FIELDS)}")
    if "new_fields" in raw_source and not infer:
        raise SpecError(f"{where}: new_fields applies to 'schema: infer'; a declared schema ignores other fields")

    raw_time = _require(raw_source, "event_time", where)
    _check_keys(raw_time, {"column", "format"}, f"{where} event_time")
    event_time = EventTime(
        column=_require(raw_time, "column", f"{where} event_time"), format=raw_time.get("format", "iso8601")
    )
    if schema and event_time.column not in schema:
        raise SpecError(f"{where}: event time column {event_time.column!r} is not in the source schema")
    required = tuple(raw_source.get("required", []))
    for column in required:
        if schema and column not in schema:
            raise SpecError(f"{where}: required field {column!r} is not in the source schema")
    if event_time.column not in required:
        required = (*required, event_time.column)
    name = raw_source.get("name")
    if name is not None and (not isinstance(name, str) or not _NAME.match(name)):
        raise SpecError(f"{where}: name {name!r} must be lower-case letters, digits and '_'")
    return Source(source_format, dict(schema), required, event_time, infer, new_fields, name)


def _process(raw: dict, where: str) -> Process:
    _check_keys(raw, {"processor", "settings"}, where)
    name = _require(raw, "processor", where)
    if name not in PROCESSORS:
        raise SpecError(f"{where}: processor {name!r} is not one of {sorted(PROCESSORS)} (jobs/processors.py)")
    defaults = PROCESSORS[name].settings
    settings = raw.get("settings") or {}
    _check_keys(settings, set(defaults), f"{where} settings")
    return Process(name, {**defaults, **settings})


def _window(raw_window: dict, where: str) -> Window:
    _check_keys(raw_window, {"duration", "slide"}, where)
    duration_s = parse_duration_s(_require(raw_window, "duration", where), f"{where} duration")
    slide_s = duration_s
    if raw_window.get("slide") is not None:
        slide_s = parse_duration_s(raw_window["slide"], f"{where} slide")
    if slide_s > duration_s:
        raise SpecError(f"{where}: slide ({slide_s}s) cannot be longer than its duration ({duration_s}s)")
    if duration_s % slide_s:
        raise SpecError(f"{where}: duration ({duration_s}s) must be a multiple of its slide ({slide_s}s)")
    return Window(duration_s, slide_s)


def _enrichment(raw: dict, source: Source, where: str) -> Enrichment:
    _check_keys(raw, {"table", "path", "format", "key", "columns", "unmatched"}, where)
    enrichment = Enrichment(
        table=_require(raw, "table", where),
        path=_require(raw, "path", where),
        format=raw.get("format", "parquet"),
        key=_require(raw, "key", where),
        columns=tuple(_require(raw, "columns", where) or ()),
        unmatched=raw.get("unmatched", "keep"),
    )
    if not isinstance(enrichment.table, str) or not _NAME.match(enrichment.table):
        raise SpecError(f"{where}: table {enrichment.table!r} must be lower-case letters, digits and '_'")
    if enrichment.format not in DIMENSION_FORMATS:
        raise SpecError(f"{where}: format {enrichment.format!r} is not one of {DIMENSION_FORMATS}")
    if enrichment.unmatched not in UNMATCHED:
        raise SpecError(f"{where}: unmatched {enrichment.unmatched!r}: use keep (nulls) or quarantine")
    if not source.infer_schema and enrichment.key not in source.schema:
        raise SpecError(f"{where}: key {enrichment.key!r} is not in the source schema")
    clashes = [c for c in enrichment.columns if c in source.schema]
    if clashes:
        raise SpecError(f"{where}: columns {clashes} are already event fields; events keep theirs")
    if not enrichment.columns or not all(_COLUMN.match(str(c)) for c in enrichment.columns):
        raise SpecError(f"{where}: columns lists the dimension's columns to add, e.g. [country, plan]")
    if enrichment.key in enrichment.columns:
        raise SpecError(f"{where}: {enrichment.key!r} is the join column; list only the columns to add")
    return enrichment


def _orchestration(raw: dict, where: str) -> Orchestration:
    _check_keys(raw, {"retries", "retry_delay", "max_retry_delay", "timeout"}, where)
    retries = raw.get("retries", Orchestration.retries)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise SpecError(f"{where}: retries must be a whole number, 0 or more")
    durations = {
        key: parse_duration_s(raw[key], f"{where} {key}")
        for key in ("retry_delay", "max_retry_delay", "timeout")
        if key in raw
    }
    return Orchestration(
        retries=retries,
        retry_delay_s=durations.get("retry_delay", Orchestration.retry_delay_s),
        max_retry_delay_s=durations.get("max_retry_delay", Orchestration.max_retry_delay_s),
        timeout_s=durations.get("timeout", Orchestration.timeout_s),
    )


def load_spec_file(path: Path) -> PipelineSpec:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise SpecError(f"{path}: not valid YAML: {error}") from error
    spec = parse_spec(raw, where=str(path))
    if spec.name != path.stem:
        raise SpecError(f"{path}: declares pipeline {spec.name!r}; the file must be named {spec.name}.yaml")
    return replace(spec, path=path)


def load_all(directory: Path = PIPELINES_DIR) -> dict[str, PipelineSpec]:
    """Every declared pipeline, by name, in name order."""
    specs = [load_spec_file(path) for path in sorted(directory.glob("*.yaml"))]
    return {spec.name: spec for spec in specs}


def load(name: str, directory: Path = PIPELINES_DIR) -> PipelineSpec:
    path = directory / f"{name}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in directory.glob("*.yaml"))) or "none"
        raise SpecError(f"unknown pipeline {name!r}; declared pipelines: {known}")
    return load_spec_file(path)
