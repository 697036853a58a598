"""The parts a declaration is made of: its source (fields of any depth, jobs/schema.py),
enrichment, window, keys, aggregates, join, processor and output. Each checks itself;
checks that span parts are in pipeline.py, how a pipeline runs in operations.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    create_model,
    field_validator,
    model_validator,
)

from jobs import schema
from jobs.columns import reserved
from jobs.declare.expressions import paths_read
from jobs.declare.problems import did_you_mean, refuse
from jobs.processors import PROCESSORS
from jobs.processors.base import Processor, ProcessorSettings
from jobs.schema import Array, Kind, Struct
from jobs.units import ColumnName, Duration, FieldPath, Name, column_name

TYPE_CHOICES = ", ".join(schema.SCALARS) + ", decimal(p,s), an object {field: type} or a list [type]"
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


def declared_kind(declared: Any, path: str) -> Kind:
    """A declared field's type: a scalar's name, a mapping (an object), or a list of one
    type (an array); refused with the field's path."""
    if isinstance(declared, str):
        try:
            return schema.scalar(declared)
        except schema.TypeSpellingError:
            raise ValueError(f"field {path!r} has type {declared!r}; use one of {TYPE_CHOICES}") from None
    if isinstance(declared, dict) and declared:
        for name in declared:
            if not isinstance(name, str) or not name or "." in name:
                raise ValueError(f"field {path!r} holds a field named {name!r}; name fields without dots")
        return Struct(tuple((name, declared_kind(kind, f"{path}.{name}")) for name, kind in declared.items()))
    if isinstance(declared, list) and len(declared) == 1:
        return Array(declared_kind(declared[0], f"{path}[]"))
    raise ValueError(f"field {path!r} has type {declared!r}; use one of {TYPE_CHOICES}")


def _declared_types(value: Any) -> dict[str, str]:
    """A mapping of field (or path) -> declared type, each type in its one spelling."""
    if not isinstance(value, dict) or not value:
        raise ValueError("must map each field name to a type, or be 'infer'")
    return {str(name): schema.spelled(declared_kind(kind, str(name))) for name, kind in value.items()}


class Source(Part):
    """Newline-delimited JSON landed in a folder. With a stream-stream join each source
    lands in a folder of its own, <landing>/<name>/."""

    name: Name | None = None
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
    _recorded: dict[str, str] | None = PrivateAttr(default=None)
    _quarantined_files: tuple[tuple[str, str], ...] = PrivateAttr(default=())

    @field_validator("declared_schema", mode="before")
    @classmethod
    def _schema_or_infer(cls, value: Any) -> Any:
        return value if value == "infer" else _declared_types(value)

    @field_validator("hints", mode="before")
    @classmethod
    def _hinted_types(cls, value: Any) -> Any:
        return _declared_types(value) if value else {}

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


class Computes(Part):
    """Computed columns and a filter over a source's usable events (jobs/declare/expressions.py):
    the pipeline's own source's, and in a join its second source's too."""

    # In order: Spark SQL over the source's fields (paths allowed), the enrichment's columns
    # and the columns computed before them.
    columns: dict[ColumnName, str] = Field(default_factory=dict)
    # A row for which it is not true is filtered: counted as such, never quarantined.
    where: str | None = None

    @field_validator("columns")
    @classmethod
    def _computed(cls, value: dict[str, str]) -> dict[str, str]:
        for name, expression in value.items():  # each one's own problem, with its name
            paths_read(expression.strip(), f"column {name!r}: {expression.strip()!r}")
        return {name: expression.strip() for name, expression in value.items()}

    @field_validator("where")
    @classmethod
    def _a_filter(cls, value: str | None) -> str | None:
        if value is not None:
            paths_read(value.strip(), f"where {value.strip()!r}")
        return value.strip() if value is not None else None

    def column_reads(self, name: str) -> tuple[str, ...]:
        return paths_read(self.columns[name], f"column {name!r}: {self.columns[name]!r}")

    @property
    def where_reads(self) -> tuple[str, ...]:
        return paths_read(self.where, f"where {self.where!r}") if self.where else ()

    def computed_problems(self, source: Source, added: tuple[str, ...]) -> list[str]:
        """Each computed column is named as no field is, and reads only what is there before
        it (`added`: the enrichment's columns)."""
        problems, before = [], set(added)
        for name in self.columns:
            if why := reserved(name):
                problems.append(f"column {name!r} may not be computed: {why}")
            elif name in source.fields or name in before:
                problems.append(f"column {name!r} is already a field of the events; name the computed column otherwise")
            roots = [(p, p.split(".")[0]) for p in self.column_reads(name)]
            later = [p for p, root in roots if root in self.columns and root not in before | set(source.fields)]
            problems += [f"column {name!r} reads {p!r}, which is computed after it (or is itself)" for p in later]
            before.add(name)
        return problems


class Enrichment(Part):
    """A stream-static join: each event gets columns of a dimension table, read every batch."""

    table: Name  # for messages and the quarantine reason no_match_in_<table>
    path: str  # relative to <root>/dimensions/, or a full path or s3a:// URI
    format: Literal["csv", "parquet"] = "parquet"
    key: FieldPath  # the event field (or path) that matches the dimension's column of its column_name
    columns: tuple[ColumnName, ...] = Field(min_length=1)
    unmatched: Literal["keep", "quarantine"] = "keep"  # keep (with nulls) or quarantine

    @model_validator(mode="after")
    def _key_is_not_added(self) -> Enrichment:
        if self.key in self.columns:
            raise ValueError(f"{self.key!r} is the join column; list only the columns to add")
        return self


class Key(Part):
    """A key of the output: the field (or path) it reads and the column it is written as
    (a path's column_name, 'repo.name' -> repo_name, unless declared as {name: path})."""

    path: FieldPath
    name: ColumnName

    @model_validator(mode="before")
    @classmethod
    def _path_or_named(cls, raw: Any) -> Any:
        if isinstance(raw, str):
            return {"path": raw, "name": column_name(raw)}
        if isinstance(raw, dict) and len(raw) == 1 and not {"path", "name"} & set(raw):
            [(name, path)] = raw.items()
            return {"path": path, "name": name}
        if isinstance(raw, dict) and set(raw) == {"path", "name"}:
            return raw
        raise ValueError(f"{raw!r}: a key is a field, a path (repo.name) or a named path ({{repo: repo.name}})")

    def __str__(self) -> str:
        return self.path if self.name == column_name(self.path) else f"{self.path} as {self.name}"


class Window(Part):
    duration_s: Duration = Field(alias="duration")
    slide_s: Duration = Field(None, alias="slide")  # not declared: tumbling (the duration, filled in below)

    @model_validator(mode="before")
    @classmethod
    def _tumbling_by_default(cls, raw: Any) -> Any:
        duration = raw.get("duration", raw.get("duration_s")) if isinstance(raw, dict) else None
        bare = isinstance(duration, int | float) and not isinstance(duration, bool)  # refused once, as the duration
        if duration is not None and not bare and raw.get("slide", raw.get("slide_s")) is None:
            return {**raw, "slide": duration}
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


AGGREGATE_FUNCTIONS = (
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "approx_count_distinct",
    "count_if",
    "percentile_approx",
    "stddev",
    "variance",
    "min_by",
    "max_by",
)
# The settings some functions take (each refused with the others).
_TAKES = {"relative_error": "approx_count_distinct", "percentage": "percentile_approx", "by": ("min_by", "max_by")}


class Aggregate(Part):
    """One aggregate of a window: a `function` of a `column` (a path or a computed column), or
    any streaming aggregate as an `expression` (jobs/declare/expressions.py)."""

    name: Name
    function: Literal[AGGREGATE_FUNCTIONS] | None = None  # type: ignore[valid-type]
    column: FieldPath | None = None
    expression: str | None = None
    relative_error: float | None = Field(None, gt=0, lt=1)  # approx_count_distinct's (Spark's default: 0.05)
    percentage: float | None = Field(None, ge=0, le=1)  # percentile_approx's
    by: FieldPath | None = None  # min_by, max_by: the column whose least (greatest) row gives the value

    @field_validator("expression")
    @classmethod
    def _an_aggregate(cls, value: str | None) -> str | None:
        if value is not None:
            paths_read(value.strip(), f"expression {value.strip()!r}", aggregate=True)
        return value.strip() if value is not None else None

    @model_validator(mode="after")
    def _needs_a_column(self) -> Aggregate:
        if (self.function is None) == (self.expression is None):
            raise ValueError("give either a 'function' (with its 'column') or an 'expression'")
        for setting, functions in _TAKES.items():
            if getattr(self, setting) is not None and self.function not in functions:
                raise ValueError(
                    f"{setting!r} is for {' and '.join(functions) if isinstance(functions, tuple) else functions}"
                )
        if self.expression is not None:
            if self.column is not None:
                raise ValueError("an 'expression' names its own columns; leave out 'column'")
            return self
        if self.function != "count" and self.column is None:
            raise ValueError(f"{self.function} needs a 'column'")
        if self.function == "percentile_approx" and self.percentage is None:
            raise ValueError("percentile_approx needs a 'percentage' (0.9: the 90th percentile)")
        if self.function in ("min_by", "max_by") and self.by is None:
            raise ValueError(
                f"{self.function} needs 'by': the column whose {self.function[:3]}imum row gives the value"
            )
        return self

    @property
    def reads(self) -> tuple[str, ...]:
        """The paths (or computed columns) it reads."""
        if self.expression is not None:
            return paths_read(self.expression, f"expression {self.expression!r}", aggregate=True)
        return tuple(path for path in (self.column, self.by) if path)

    def __str__(self) -> str:
        if self.expression is not None:
            return f"{self.name}={self.expression}"
        args = [self.column or "*", *(str(v) for v in (self.by, self.percentage, self.relative_error) if v is not None)]
        return f"{self.name}={self.function}({', '.join(args)})"


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


class Join(Computes):
    """Events of the pipeline's source (the left side) matched with those of a second one
    (`columns` and `where`: the second one's, before the join).

    A right event matches a left event with the same key whose event time is at most
    `within_s` before its own. Both sides are watermarked, so Spark can forget events
    that can no longer match.
    """

    source: Source  # the right side
    watermark_s: Duration = Field(alias="watermark")
    key: FieldPath  # a field (or path) of both sources
    within_s: Duration = Field(alias="within")
    how: Literal["inner", "left_outer"] = "inner"  # left_outer: unmatched left events, with nulls, once forgotten


class Output(Part):
    format: Literal["parquet", "delta"] = "parquet"  # delta: a Delta Lake table (jobs/lake/delta.py)
    partition_by: str | None = None  # the pattern says which column may partition it
