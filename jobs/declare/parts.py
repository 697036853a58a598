"""The parts a declaration is made of: its source (fields of any depth, jobs/schema.py),
enrichment, processor and output (what it computes: computing.py). Each checks itself;
checks that span parts are in pipeline.py, how a pipeline runs in operations.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    TypeAdapter,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from jobs import schema
from jobs.columns import reserved
from jobs.declare import graph
from jobs.declare.code import imported
from jobs.declare.problems import did_you_mean, refuse
from jobs.lake.layout import join, normalize
from jobs.processors import PROCESSORS
from jobs.processors.base import Processor, ProcessorSettings
from jobs.processors.own import definition
from jobs.schema import Array, Kind
from jobs.units import CodeName, ColumnName, Duration, FieldPath, Name

MAX_DEPTH = 64  # objects and arrays in a record, by default: deeper than real events nest, far below any parser's limit
MAX_FUTURE_S = 86400  # an event time more than a day after its batch's is quarantined, by default


class Part(BaseModel):
    """Unknown settings are refused; a loaded declaration never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class EventTime(Part):
    column: FieldPath
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


class Listing(Part):
    """How a run lists a dated landing (dt=YYYY-MM-DD folders): from the newest day it has
    taken, and every day within `lateness` of today (files may still land in them); every
    folder at least every `whole_every`, when a file that landed in a day already passed is
    found, taken and named (docs/layout.md, "Dated folders")."""

    lateness_s: Duration = Field(2 * 24 * 3600, alias="lateness")
    whole_every_s: Duration = Field(24 * 3600, alias="whole_every")


class Source(Part):
    """Newline-delimited JSON landed in a folder. With a stream-stream join each source
    lands in a folder of its own, <landing>/<name>/. Or another pipeline's table
    (`table: <pipeline>`): its rows as they were committed, its schema the table's."""

    name: Name | None = None
    # The pipeline whose table this source reads (jobs/declare/graph.py); None: a landing.
    table: Name | None = None
    # That table's format, as its pipeline declares it: set on load, never written (graph.py).
    table_format: Literal["parquet", "delta"] | None = None
    format: Literal["json"]
    # field -> type (objects and arrays nest: jobs/schema.py), or "infer": inferred from
    # what has landed by the first run, then recorded with the checkpoint (with_recorded_fields).
    declared_schema: dict[ColumnName, str] | Literal["infer"] = Field(alias="schema")
    # With 'infer': the types of these paths, whatever was inferred ({repo.id: long}).
    hints: dict[FieldPath, str] = {}
    required: tuple[FieldPath, ...] = ()  # records without these are quarantined; the event time always is
    event_time: EventTime
    new_fields: Literal["fail", "ignore", "rescue"] = "ignore"  # fields an inferred schema has not seen
    # strict: a field takes only its own JSON type (else wrong_field_type); coerce: a top-level
    # string field also takes numbers, booleans, objects and arrays, as their JSON text.
    types: Literal["strict", "coerce"] = "strict"
    # A value of another type: quarantine the record (wrong_field_type), or rescue it: the
    # record is kept, the field null, and the value in _rescued_data under its path.
    on_type_mismatch: Literal["quarantine", "rescue"] = "quarantine"
    # A record nesting objects and arrays deeper than this is quarantined as too_deeply_nested.
    max_depth: int = Field(MAX_DEPTH, ge=1, le=500)
    # Other pipelines read this landing too (each declaring it shared): retention then removes a
    # landed file only once every one of them has read it. Unshared, a second reader is refused.
    shared: bool = False
    listing: Listing = Listing()
    _recorded: dict[str, str] | None = PrivateAttr(default=None)
    _quarantined_files: tuple[tuple[str, str], ...] = PrivateAttr(default=())

    @model_validator(mode="before")
    @classmethod
    def _a_table_says_its_schema(cls, raw: Any) -> Any:
        return graph.table_says(raw)

    @field_validator("declared_schema", mode="before")
    @classmethod
    def _schema_or_infer(cls, value: Any) -> Any:
        return value if value == "infer" else schema.declared_types(value)

    @field_validator("hints", mode="before")
    @classmethod
    def _hinted_types(cls, value: Any) -> Any:
        return schema.declared_types(value) if value else {}

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
        problems = []
        if "new_fields" in self.model_fields_set and not self.infer_schema:
            problems.append("new_fields applies to 'schema: infer'; a declared schema ignores other fields")
        if self.hints and not self.infer_schema:
            problems.append("hints apply to 'schema: infer'; declare the types in the schema instead")
        if not self.infer_schema:
            problems += [
                f"field {name!r} may not be declared: {why}" for name in self.declared_schema if (why := reserved(name))
            ]
            column = self.event_time.column  # required too (_event_time_is_required): named once
            named = [("event time column", column), *(("required field", p) for p in self.required if p != column)]
            problems += [f"{what} {path!r} {refused}" for what, path in named if (refused := self.refuse_path(path))]
        refuse(problems)
        return self

    @property
    def infer_schema(self) -> bool:
        return self.declared_schema == "infer"

    @property
    def fields(self) -> dict[str, str]:
        """The fields read from each record, each type in its spelling (jobs/schema.py):
        declared, or once inferred and recorded, with the hints' types (else none yet)."""
        if not self.infer_schema:
            return dict(self.declared_schema)
        if self._recorded is None:
            return {}
        columns = self.renamed
        kinds = {columns.get(key, key): schema.kind_of(kind) for key, kind in self._recorded.items()}
        for path, kind in self.hints.items():
            kinds = schema.with_type_at(kinds, path, schema.kind_of(kind))
        return {name: schema.spelled(kind) for name, kind in kinds.items()}

    @property
    def kinds(self) -> dict[str, Kind]:
        """The same fields, each with its type read."""
        return {name: schema.kind_of(kind) for name, kind in self.fields.items()}

    def kind_at(self, path: str) -> Kind | None:
        """The type of the field a path names; None when the schema has none (or is not known yet)."""
        return schema.at_path(self.kinds, path)

    def refuse_path(self, path: str) -> str | None:
        """Why a path names no field of the known schema (None: it names one, or the schema is not known yet)."""
        if not self.fields or self.kind_at(path) is not None:
            return None
        first, *rest = path.split(".")
        inside = None
        for depth in range(len(rest), 0, -1):
            parent = ".".join([first, *rest[: depth - 1]])
            if isinstance(self.kind_at(parent), Array):
                inside = parent
                break
        if inside:
            return f"is inside the array {inside!r}; a path goes through objects only"
        return "is not in the source schema" + did_you_mean(path, schema.paths(self.kinds))

    @property
    def renamed(self) -> dict[str, str]:
        """Key -> column of the inferred fields named as the product's own columns
        (jobs/columns.py reserved): `event_time` is read as `event_time_1` (the first free)."""
        keys = set(self._recorded or ())
        renamed: dict[str, str] = {}
        for key in self._recorded or ():
            if reserved(key):
                column = next(f"{key}_{n}" for n in range(1, len(keys) + 2) if f"{key}_{n}" not in keys)
                renamed[key] = column
                keys.add(column)
        return renamed

    def key_of(self, column: str) -> str:
        """The key a field's column is read from in each record (its own name, unless renamed)."""
        return next((key for key, renamed in self.renamed.items() if renamed == column), column)

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

    @property
    def rescues(self) -> bool:
        """Whether records carry `_rescued_data` (new fields, or values of another type)."""
        return self.new_fields == "rescue" or self.on_type_mismatch == "rescue"


class Enrichment(Part):
    """A stream-static join: each event gets columns of a dimension table, read every batch."""

    table: Name  # for messages and the quarantine reason no_match_in_<table>
    path: str  # relative to <root>/dimensions/, or a full path or s3a:// URI
    format: Literal["csv", "parquet"] = "parquet"
    key: FieldPath  # the event field (or path) that matches the dimension's column of its column_name
    columns: tuple[ColumnName, ...] = Field(min_length=1)
    unmatched: Literal["keep", "quarantine"] = "keep"  # keep (with nulls) or quarantine

    def location(self, dimensions: str) -> str:
        """Where the table is: a relative path is under the dimensions folder (<root>/dimensions/);
        a full path or URI as it is."""
        full = self.path.startswith("/") or "://" in self.path
        return normalize(self.path) if full else join(dimensions, self.path)

    @model_validator(mode="after")
    def _key_is_not_added(self) -> Enrichment:
        if self.key in self.columns:
            raise ValueError(f"{self.key!r} is the join column; list only the columns to add")
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


class OwnProcessorChoice(ProcessorChoice):
    """A team's own processor, `module:Class` (jobs/processors/own.py), and its settings: its
    module is imported when the declaration loads, to check them against its Settings."""

    processor: CodeName

    @model_validator(mode="before")
    @classmethod
    def _own_settings(cls, raw: Any) -> Any:
        try:
            name = TypeAdapter(CodeName).validate_python(raw["processor"])
        except (TypeError, KeyError, ValidationError):
            return raw  # the field's own check says what is wrong with it
        found = own_definition(name)
        # Required: a Settings field without a default must be declared; its errors name `settings`.
        checked = create_model("own_settings", settings=(found.settings, ...))
        return {**raw, "settings": checked.model_validate({"settings": raw.get("settings") or {}}).settings}

    @property
    def definition(self) -> Processor:
        return own_definition(self.processor)


def own_definition(name: str) -> Processor:
    """The processor `name` (module:Class) names, imported; ValueError naming what is wrong."""
    return definition(name, imported(name, "processor", "class"))


def rocksdb_for_own(raw: Any) -> Any:
    """A team's own processor runs on transformWithStateInPandas, which keeps its state only
    in RocksDB: a raw declaration's state store is rocksdb unless declared (hdfs is refused)."""
    process, spark = (raw.get(k) if isinstance(raw, dict) else None for k in ("process", "spark"))
    name = process.get("processor") if isinstance(process, dict) else None
    if not (isinstance(name, str) and ":" in name) or (spark is not None and not isinstance(spark, dict)):
        return raw
    store = (spark or {}).get("state_store", "rocksdb")
    if store != "rocksdb":
        raise ValueError(
            f"spark state_store {store!r}: a processor of your own ({name}) runs on Spark's "
            "transformWithStateInPandas, whose state only RocksDB keeps; leave state_store out (rocksdb)"
        )
    return {**raw, "spark": {**(spark or {}), "state_store": "rocksdb"}}


def _processor_tag(raw: Any) -> Any:
    name = raw.get("processor") if isinstance(raw, dict) else getattr(raw, "processor", None)
    return OWN if isinstance(name, str) and ":" in name else name


OWN = "module:Class"  # the tag of a team's own processor, as a refusal lists it among the shipped ones
# Which settings are allowed depends on the processor named: a union told apart by name.
Process = Annotated[
    Union[
        (*(Annotated[_choice(p), Tag(p.name)] for p in PROCESSORS.values()), Annotated[OwnProcessorChoice, Tag(OWN)])
    ],
    Discriminator(_processor_tag),
]


class Output(Part):
    format: Literal["parquet", "delta"] = "parquet"  # delta: a Delta Lake table (jobs/lake/delta.py)
    partition_by: str | None = None  # the pattern says which column may partition it
