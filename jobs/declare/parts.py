"""The parts a declaration is made of: its source, enrichment, window, aggregates, join,
processor, output and Airflow settings. Each checks itself; checks that span parts are
in pipeline.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    PrivateAttr,
    create_model,
    field_validator,
    model_validator,
)

from jobs.processors import PROCESSORS
from jobs.processors.base import Processor, ProcessorSettings
from jobs.units import ColumnName, Duration, Name, Size

FieldType = Literal["string", "long", "int", "double", "boolean", "timestamp", "date"]
FIELD_TYPES = get_args(FieldType)
MAX_DEPTH = 64  # objects and arrays in a record, by default: deeper than real events nest, far below any parser's limit
MAX_FUTURE_S = 86400  # an event time more than a day after its batch's is quarantined, by default


class Part(BaseModel):
    """Unknown settings are refused; a loaded declaration never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class EventTime(Part):
    column: str
    # ISO-8601 (a trailing Z or an offset; no zone means UTC), epoch_seconds,
    # epoch_millis, or a Spark datetime pattern such as "yyyy-MM-dd HH:mm:ss".
    format: str = "iso8601"
    # An event stamped later than its batch's time plus this is quarantined as
    # event_time_in_future, so that one broken clock cannot move the watermark; 'none': never.
    max_future_s: Duration | None = Field(MAX_FUTURE_S, alias="max_future")

    @field_validator("max_future_s", mode="before")
    @classmethod
    def _none_turns_it_off(cls, value: Any) -> Any:
        return None if value is None or str(value).strip().lower() == "none" else value


class Source(Part):
    """Newline-delimited JSON landed in a folder. With a stream-stream join each source
    lands in a folder of its own, <landing>/<name>/."""

    name: Name | None = None
    format: Literal["json"]
    # field -> type, or "infer": inferred from what has landed by the first run, then
    # recorded with the checkpoint (see with_recorded_fields).
    declared_schema: dict[ColumnName, FieldType] | Literal["infer"] = Field(alias="schema")
    required: tuple[str, ...] = ()  # records without these are quarantined; the event time always is
    event_time: EventTime
    new_fields: Literal["fail", "ignore", "rescue"] = "ignore"  # fields an inferred schema has not seen
    # strict: a field takes only its own JSON type (else wrong_field_type); coerce: a string
    # field also takes numbers, booleans, objects and arrays, as their JSON text.
    types: Literal["strict", "coerce"] = "strict"
    # A record nesting objects and arrays deeper than this is quarantined as too_deeply_nested.
    max_depth: int = Field(MAX_DEPTH, ge=1, le=500)
    _recorded: dict[str, str] | None = PrivateAttr(default=None)
    _quarantined_files: tuple[tuple[str, str], ...] = PrivateAttr(default=())

    @field_validator("declared_schema", mode="before")
    @classmethod
    def _schema_or_infer(cls, value: Any) -> Any:
        if value != "infer" and (not isinstance(value, dict) or not value):
            raise ValueError("must map each field name to a type, or be 'infer'")
        if isinstance(value, dict):
            for field, kind in value.items():
                if kind not in FIELD_TYPES:
                    raise ValueError(f"field {field!r} has type {kind!r}; use one of {FIELD_TYPES}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _event_time_is_required(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and isinstance(raw.get("event_time"), dict):
            required, column = raw.get("required") or [], raw["event_time"].get("column")
            if isinstance(required, list | tuple) and column not in required:
                return {**raw, "required": [*required, column]}
        return raw

    @model_validator(mode="after")
    def _fields_are_declared(self) -> Source:
        if "new_fields" in self.model_fields_set and not self.infer_schema:
            raise ValueError("new_fields applies to 'schema: infer'; a declared schema ignores other fields")
        if not self.infer_schema:
            if self.event_time.column not in self.fields:
                raise ValueError(f"event time column {self.event_time.column!r} is not in the source schema")
            for column in self.required:
                if column not in self.fields:
                    raise ValueError(f"required field {column!r} is not in the source schema")
        return self

    @property
    def infer_schema(self) -> bool:
        return self.declared_schema == "infer"

    @property
    def fields(self) -> dict[str, str]:
        """The fields read from each record: declared, or recorded once inferred (else none yet)."""
        if self._recorded is not None:
            return self._recorded
        return {} if self.infer_schema else dict(self.declared_schema)

    def with_recorded_fields(self, fields: dict[str, str]) -> Source:
        source = self.model_copy()
        source._recorded = dict(fields)
        return source

    @property
    def quarantined_files(self) -> tuple[tuple[str, str], ...]:
        """(landed file, reason) of the files quarantined by hand (python -m jobs quarantine-file):
        their lines are quarantined unread."""
        return self._quarantined_files

    def with_quarantined_files(self, files: dict[str, str]) -> Source:
        source = self.model_copy()
        source._quarantined_files = tuple(sorted(files.items()))
        return source


class Enrichment(Part):
    """A stream-static join: each event gets columns of a dimension table, read every batch."""

    table: Name  # for messages and the quarantine reason no_match_in_<table>
    path: str  # relative to <root>/dimensions/, or a full path or s3a:// URI
    format: Literal["csv", "parquet"] = "parquet"
    key: str  # the event field and the dimension column that match
    columns: tuple[ColumnName, ...] = Field(min_length=1)
    unmatched: Literal["keep", "quarantine"] = "keep"  # keep (with nulls) or quarantine

    @model_validator(mode="after")
    def _key_is_not_added(self) -> Enrichment:
        if self.key in self.columns:
            raise ValueError(f"{self.key!r} is the join column; list only the columns to add")
        return self


class Window(Part):
    duration_s: Duration = Field(alias="duration")
    slide_s: Duration = Field(alias="slide")  # not declared: tumbling (the duration)

    @model_validator(mode="before")
    @classmethod
    def _tumbling_by_default(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and raw.get("slide", raw.get("slide_s")) is None:
            return {**raw, "slide": raw.get("duration", raw.get("duration_s"))}
        return raw

    @model_validator(mode="after")
    def _slides_evenly(self) -> Window:
        if self.slide_s > self.duration_s:
            raise ValueError(f"slide ({self.slide_s}s) cannot be longer than its duration ({self.duration_s}s)")
        if self.duration_s % self.slide_s:
            raise ValueError(f"duration ({self.duration_s}s) must be a multiple of its slide ({self.slide_s}s)")
        return self

    @property
    def is_tumbling(self) -> bool:
        return self.duration_s == self.slide_s


class Aggregate(Part):
    name: Name
    function: Literal["count", "sum", "avg", "min", "max"]
    column: str | None = None

    @model_validator(mode="after")
    def _needs_a_column(self) -> Aggregate:
        if self.function != "count" and self.column is None:
            raise ValueError(f"{self.function} needs a 'column'")
        return self


class ProcessorChoice(Part):
    """A processor of jobs/processors/ (by name) and its settings."""

    processor: str
    settings: ProcessorSettings

    @property
    def definition(self) -> Processor:
        return PROCESSORS[self.processor]


def _choice(processor: Processor) -> type[ProcessorChoice]:
    """The declaration of one processor: its name, and its own settings model with defaults."""
    return create_model(
        f"{processor.name}_process",
        __base__=ProcessorChoice,
        processor=(Literal[processor.name], ...),
        settings=(processor.settings, processor.settings()),
    )


# Which settings are allowed depends on the processor named: a union told apart by name.
Process = Annotated[Union[tuple(_choice(p) for p in PROCESSORS.values())], Field(discriminator="processor")]  # noqa: UP007


class Join(Part):
    """Events of the pipeline's source (the left side) matched with those of a second one.

    A right event matches a left event with the same key whose event time is at most
    `within_s` before its own. Both sides are watermarked, so Spark can forget events
    that can no longer match.
    """

    source: Source  # the right side
    watermark_s: Duration = Field(alias="watermark")
    key: str
    within_s: Duration = Field(alias="within")
    how: Literal["inner", "left_outer"] = "inner"  # left_outer: unmatched left events, with nulls, once forgotten


class Output(Part):
    format: Literal["parquet"] = "parquet"
    partition_by: str | None = None  # the pattern says which column may partition it


class Retention(Part):
    """How long landed files and output files are kept (the declaration's optional
    `retention:` block; jobs/run/retention.py). By default, everything is kept."""

    # keep; delete, or archive (moved to <root>/archive/<pipeline>/, same relative path), the
    # landed files of batches accounted `landed_after` ago (0: as soon as accounted).
    landed: Literal["keep", "delete", "archive"] = "keep"
    landed_after_s: Literal[0] | Duration = Field(30 * 24 * 3600, alias="landed_after")
    # Output files written this long ago leave the table: Spark's sink log drops them when it
    # next compacts (the file sink's `retention`), and the run after removes them from the folder.
    output_after_s: Duration | None = Field(None, alias="output_after")


STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


class SparkSettings(Part):
    """Sizes for big backlogs (the declaration's optional `spark:` block). They reach both
    `python -m jobs run` and the spark-submit of the pipeline's Airflow DAG."""

    driver_memory: Size | None = None  # Spark's default: 1g. In local mode the executors are the driver.
    executor_memory: Size | None = None  # on a cluster
    # Where state lives: "hdfs" (Spark's default: the JVM heap, snapshotted to the
    # checkpoint) or "rocksdb" (off the heap, with changelog checkpointing) for many keys.
    state_store: Literal["hdfs", "rocksdb"] = "hdfs"
    # Admission control, one or the other (jobs/flow/admission.py); by default derived from the driver's memory.
    max_files_per_trigger: PositiveInt | None = None
    max_bytes_per_trigger: Size | None = None
    conf: dict[str, str] = {}  # any other Spark setting, e.g. spark.sql.files.maxPartitionBytes

    @model_validator(mode="after")
    def _one_limit(self) -> SparkSettings:
        if self.max_files_per_trigger and self.max_bytes_per_trigger:
            raise ValueError("set max_files_per_trigger or max_bytes_per_trigger, not both (Spark takes one)")
        return self

    @field_validator("conf")
    @classmethod
    def _spark_settings_only(cls, conf: dict[str, str]) -> dict[str, str]:
        named = {"spark.driver.memory": "driver_memory", "spark.executor.memory": "executor_memory"}
        for key in conf:
            if not key.startswith("spark."):
                raise ValueError(f"{key!r} is not a Spark setting (they start with 'spark.')")
            if key in named:
                raise ValueError(f"set {key} as {named[key]}, not in conf")
            if key in ("spark.sql.shuffle.partitions", "spark.sql.streaming.stateStore.providerClass"):
                raise ValueError(f"{key} is set by the declaration's state_partitions and state_store")
        return conf

    def session_conf(self) -> dict[str, str]:
        """Settings of the JVM's start (a new session, or spark-submit's --conf)."""
        memory = {"spark.driver.memory": self.driver_memory, "spark.executor.memory": self.executor_memory}
        return {key: f"{size // 2**20}m" for key, size in memory.items() if size} | self.sql_conf()

    def sql_conf(self) -> dict[str, str]:
        """Settings a running session takes before the query starts."""
        conf = {"spark.sql.streaming.stateStore.providerClass": STATE_STORES[self.state_store], **self.conf}
        if self.state_store == "rocksdb":
            conf["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] = "true"
        return conf


class Orchestration(Part):
    """How Airflow runs the pipeline's DAG (the declaration's optional `airflow:` block)."""

    retries: int = 2
    retry_delay_s: Duration = Field(60, alias="retry_delay")  # doubled on each retry, up to max_retry_delay_s
    max_retry_delay_s: Duration = Field(1800, alias="max_retry_delay")
    timeout_s: Duration = Field(3600, alias="timeout")  # a longer run is stopped, and retried from its checkpoint

    @model_validator(mode="before")
    @classmethod
    def _whole_retries(cls, raw: Any) -> Any:
        retries = raw.get("retries", 0) if isinstance(raw, dict) else 0
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError("retries must be a whole number, 0 or more")
        return raw
