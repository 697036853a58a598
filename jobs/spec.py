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

PIPELINES_DIR = Path(__file__).parent / "pipelines"

SOURCE_FORMATS = ("json",)
FIELD_TYPES = ("string", "long", "int", "double", "boolean", "timestamp", "date")
AGGREGATE_FUNCTIONS = ("count", "sum", "avg", "min", "max")
OUTPUT_FORMATS = ("parquet",)
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
    schema: dict[str, str]
    required: tuple[str, ...]
    event_time: EventTime

    def ddl(self) -> str:
        return ", ".join(f"`{name}` {kind}" for name, kind in self.schema.items())


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
    watermark_s: int
    window: Window
    keys: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]
    output: Output
    schedule: str | None = None
    orchestration: Orchestration = Orchestration()
    # Fixed by the first run: Spark stores the number of state partitions in the checkpoint.
    state_partitions: int = 4
    path: Path | None = field(default=None, compare=False)

    @property
    def output_columns(self) -> list[str]:
        return ["window_start", "window_end", *self.keys, *(a.name for a in self.aggregates)]

    def state_contract(self) -> dict[str, Any]:
        """The parts of the declaration a checkpoint cannot outlive a change of.

        Spark keeps aggregation state keyed by window and keys, with one slot per
        aggregate, and the file sink's log lives with the output: change any of these
        and the checkpoint no longer describes the query.
        """
        return {
            "source_format": self.source.format,
            "event_time_column": self.source.event_time.column,
            "window_duration_s": self.window.duration_s,
            "window_slide_s": self.window.slide_s,
            "keys": list(self.keys),
            "aggregates": [asdict(a) for a in self.aggregates],
            "output_format": self.output.format,
            "partition_by": self.output.partition_by,
            "state_partitions": self.state_partitions,
        }


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
            "aggregates",
            "output",
            "state_partitions",
            "airflow",
        },
        where,
    )
    name = _require(raw, "name", where)
    if not isinstance(name, str) or not _NAME.match(name):
        raise SpecError(f"{where}: name {name!r} must be lower-case letters, digits and '_'")
    where = f"pipeline '{name}'"

    raw_source = _require(raw, "source", where)
    _check_keys(raw_source, {"format", "schema", "required", "event_time"}, f"{where} source")
    source_format = _require(raw_source, "format", f"{where} source")
    if source_format not in SOURCE_FORMATS:
        raise SpecError(f"{where}: source format {source_format!r} is not one of {SOURCE_FORMATS}")
    schema = _require(raw_source, "schema", f"{where} source")
    if not isinstance(schema, dict) or not schema:
        raise SpecError(f"{where}: source schema must map each field name to a type")
    for column, kind in schema.items():
        if not _COLUMN.match(str(column)):
            raise SpecError(f"{where}: schema field {column!r} is not a plain column name")
        if kind not in FIELD_TYPES:
            raise SpecError(f"{where}: schema field {column!r} has type {kind!r}; use one of {FIELD_TYPES}")

    raw_time = _require(raw_source, "event_time", f"{where} source")
    _check_keys(raw_time, {"column", "format"}, f"{where} source event_time")
    event_time = EventTime(
        column=_require(raw_time, "column", f"{where} source event_time"),
        format=raw_time.get("format", "iso8601"),
    )
    if event_time.column not in schema:
        raise SpecError(f"{where}: event time column {event_time.column!r} is not in the source schema")

    required = tuple(raw_source.get("required", []))
    for column in required:
        if column not in schema:
            raise SpecError(f"{where}: required field {column!r} is not in the source schema")
    if event_time.column not in required:
        required = (*required, event_time.column)
    source = Source(source_format, dict(schema), required, event_time)

    watermark_s = parse_duration_s(_require(raw, "watermark", where), f"{where} watermark")
    raw_window = _require(raw, "window", where)
    _check_keys(raw_window, {"duration", "slide"}, f"{where} window")
    duration_s = parse_duration_s(_require(raw_window, "duration", f"{where} window"), f"{where} window duration")
    slide_s = duration_s
    if raw_window.get("slide") is not None:
        slide_s = parse_duration_s(raw_window["slide"], f"{where} window slide")
    if slide_s > duration_s:
        raise SpecError(f"{where}: window slide ({slide_s}s) cannot be longer than its duration ({duration_s}s)")
    if duration_s % slide_s:
        raise SpecError(f"{where}: window duration ({duration_s}s) must be a multiple of its slide ({slide_s}s)")

    keys = tuple(_require(raw, "keys", where))
    for key in keys:
        if key not in schema:
            raise SpecError(f"{where}: key {key!r} is not in the source schema")

    aggregates = []
    for i, raw_agg in enumerate(_require(raw, "aggregates", where) or []):
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
        if agg.column is not None and agg.column not in schema:
            raise SpecError(f"{agg_where}: column {agg.column!r} is not in the source schema")
        aggregates.append(agg)
    if not aggregates:
        raise SpecError(f"{where}: declare at least one aggregate")
    columns = ["window_start", "window_end", *keys, *(a.name for a in aggregates)]
    if len(set(columns)) != len(columns):
        raise SpecError(f"{where}: output column names collide: {columns}")

    raw_output = _require(raw, "output", where)
    _check_keys(raw_output, {"format", "partition_by"}, f"{where} output")
    output = Output(raw_output.get("format", "parquet"), raw_output.get("partition_by"))
    if output.format not in OUTPUT_FORMATS:
        raise SpecError(f"{where}: output format {output.format!r} is not one of {OUTPUT_FORMATS}")
    if output.partition_by not in (None, "window_date"):
        raise SpecError(f"{where}: output partition_by may only be 'window_date' (the UTC date of window_start)")

    state_partitions = raw.get("state_partitions", 4)
    if not isinstance(state_partitions, int) or state_partitions < 1:
        raise SpecError(f"{where}: state_partitions must be a positive whole number")

    return PipelineSpec(
        orchestration=_orchestration(raw.get("airflow") or {}, f"{where} airflow"),
        name=name,
        description=str(raw.get("description", "")).strip(),
        source=source,
        watermark_s=watermark_s,
        window=Window(duration_s, slide_s),
        keys=keys,
        aggregates=tuple(aggregates),
        output=output,
        schedule=raw.get("schedule"),
        state_partitions=state_partitions,
    )


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
