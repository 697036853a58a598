"""What a pipeline computes over its events: computed columns and `where` (over the source's
own events, and a join's second source's), a window, its keys and aggregates, and a join.
Each checks itself; the expressions are read by expressions.py, without Spark."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from jobs.columns import EVENT_TIME, reserved
from jobs.declare.expressions import paths_read
from jobs.declare.parts import Part, Source
from jobs.schema import spelled, with_type_at
from jobs.units import ColumnName, Duration, FieldPath, Name, column_name


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

    def side_problems(self) -> list[str]:
        """Its source's computed columns and filter read that source's fields (and its columns)."""
        reads = {f"join column {name!r} field": self.column_reads(name) for name in self.columns}
        reads |= {"join where field": self.where_reads} if self.where else {}
        refused = [
            f"{what} {path!r} {why.replace('the source', f'the {self.source.name}')}"
            for what, paths in reads.items()
            for path in paths
            if path.split(".")[0] not in {*self.columns, EVENT_TIME} and (why := self.source.refuse_path(path))
        ]
        return [*self.computed_problems(self.source, ()), *refused]

    def key_problems(self, left: Source) -> list[str]:
        """What is wrong with the key between `left` (the pipeline's source) and this side."""
        right, key = self.source, self.key
        refused = [
            f"join key {key!r} {why.replace('the source', f'the {side.name}')}"
            for side in (left, right)
            if (why := side.refuse_path(key))
        ]
        if refused:
            return refused
        left_kind, right_kind = (spelled(side.kind_at(key)) for side in (left, right))
        if left_kind != right_kind:
            return [
                f"join key {key!r} is a {left_kind} in {left.name} and a {right_kind} in {right.name}; "
                "declare it with one type on both sides"
            ]
        # The output keeps the left side's key; the right's field holding it is left out,
        # so it may hold nothing else.
        root = key.split(".")[0]
        only_the_key = with_type_at({}, key, right.kind_at(key))[root]
        if spelled(right.kinds[root]) != spelled(only_the_key):
            return [
                f"join key {key!r}: the output leaves out {right.name}'s field {root!r}, which holds the key "
                f"and more ({spelled(right.kinds[root])}); declare only the key under it"
            ]
        return []
