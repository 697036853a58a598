"""A pipeline declaration: what the pipeline is (its pattern), and the checks that span parts.

Each pattern has a model of its own, and `Pipeline` is the union of them, told apart by
the declaration's `pattern` (a declaration without one gets the pattern its settings
imply: `window`, `process` or `join`, else `events`):

    window   watermarked event-time windows aggregated per key, optionally deduplicated
    process  a stateful processor (jobs/processors/) per key
    join     a stream-stream join with a second source
    events   each usable event as it is, optionally enriched

What a pattern *does* (its query, late rows, state, contract, backfill) is in
jobs/flow/patterns/; this module only says what a declaration of it may contain.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import Discriminator, Field, PositiveInt, PrivateAttr, Tag, field_validator, model_validator

from jobs.columns import EVENT_TIME
from jobs.declare import graph
from jobs.declare.computing import Aggregate, Computes, Join, Key, Window
from jobs.declare.operations import Arrival, Orchestration, Quality, Retention, SparkSettings
from jobs.declare.parts import Enrichment, Output, Part, Process, Source, rocksdb_for_own
from jobs.declare.problems import did_you_mean, refuse
from jobs.declare.rules import Rule, rule_problems
from jobs.units import ON_ARRIVAL, CodeName, Duration, FieldPath, Name, Schedule

PATTERNS = ("window", "process", "join", "events")
WATERMARK_NEEDED = "missing 'watermark' (windows, deduplication, joins and timeouts keep state until it passes)"


class PipelineBase(Computes):
    pattern: str
    name: Name
    description: str = ""
    schedule: Schedule | None = None  # when Airflow runs it (the DAG jobs_<name>); None (left out): only by hand
    on_arrival: Arrival = Arrival()  # with `schedule: on_arrival`: how it waits for files
    # Runs with the other pipelines of this group in one Spark application, on their one
    # schedule (the DAG jobs_group_<group>; jobs/declare/groups.py).
    group: Name | None = None
    source: Source
    enrich: Enrichment | None = None
    # Events whose time is this far behind the newest event seen are late (see README).
    watermark_s: Duration | None = Field(None, alias="watermark")
    output: Output
    # What each record must be beyond its schema, and what to do with one that is not (rules.py).
    rules: tuple[Rule, ...] = ()
    # A team's own function, DataFrame -> DataFrame, between `where` and the pattern
    # (jobs/flow/transform.py): never imported when a declaration loads.
    transform: CodeName | None = None
    orchestration: Orchestration = Field(Orchestration(), alias="airflow")
    # The `spark:` block: how big its application is (a run's session is `RunContext.spark`).
    spark_settings: SparkSettings = Field(SparkSettings(), alias="spark")
    retention: Retention = Retention()
    quality: Quality = Quality()  # anomalies: how a run is held against its history
    freshness_s: Duration | None = Field(None, alias="freshness")  # before it is late: jobs/history/freshness.py
    # Fixed by the first run: Spark stores the number of state partitions in the checkpoint.
    state_partitions: PositiveInt = 4
    # The YAML this declaration was loaded from (None: made in code), kept with the checkpoint
    # its first run starts, so that a build's declaration can be put back after a rollback.
    _yaml: str | None = PrivateAttr(None)

    # The column a pattern's output may be partitioned by (its UTC date), if any.
    partition_column: ClassVar[str | None] = "event_date"
    partition_meaning: ClassVar[str] = "event_time"

    def __eq__(self, other: object) -> bool:
        """Equal when they declare the same: the YAML's own spelling (comments, order) aside."""
        if not isinstance(other, PipelineBase):
            return NotImplemented
        mine, theirs = (dict(p.__pydantic_private__ or {}) for p in (self, other))
        mine.pop("_yaml", None), theirs.pop("_yaml", None)
        return type(self) is type(other) and self.__dict__ == other.__dict__ and mine == theirs

    __hash__ = Part.__hash__

    @property
    def as_written(self) -> str | None:
        """The declaration's YAML, as its file had it when loaded (None: made in code)."""
        return self._yaml

    @property
    def sources(self) -> list[Source]:
        """The streams the query reads, in the order of their checkpoint ids (sources/0, 1)."""
        return [self.source]

    @field_validator("description", mode="before")
    @classmethod
    def _one_paragraph(cls, value: Any) -> str:
        return str(value or "").strip()

    @model_validator(mode="after")
    def _parts_agree(self) -> PipelineBase:
        refuse(self._problems())
        return self

    def _problems(self) -> list[str]:
        """Whatever the parts, each valid on its own, say of each other: every problem, in
        one line each (a pattern adds its own)."""
        added = self.enrich.columns if self.enrich else ()
        problems = [*rule_problems(self.rules), *self.computed_problems(self.source, added)]
        partition = self.output.partition_by
        if partition is not None and partition != self.partition_column:
            if self.partition_column is None:
                problems.append(f"a {self.pattern} pipeline's output is not partitioned; leave out partition_by")
            else:
                problems.append(
                    f"output partition_by may only be '{self.partition_column}' "
                    f"(the UTC date of {self.partition_meaning})"
                )
        if self.output.format == "delta" and self.retention.output_after_s is not None:
            problems.append(
                "retention.output_after is for a Parquet table's sink log; a Delta table keeps its rows "
                "(leave it out, and see retention.time_travel)"
            )
        problems += graph.reader_problems(self.source.table, self.schedule, self.retention.landed)
        if self.output.format == "parquet" and "time_travel_s" in self.retention.model_fields_set:
            problems.append("retention.time_travel is for a Delta table (output format: delta)")
        if "on_arrival" in self.model_fields_set and self.schedule != ON_ARRIVAL:
            problems.append(f"an on_arrival block is for `schedule: {ON_ARRIVAL}`, not {self.schedule!r}")
        if self.enrich is not None:
            clashes = [c for c in self.enrich.columns if c in self.source.fields]
            if clashes:
                problems.append(f"enrich columns {clashes} are already event fields; events keep theirs")
        return problems

    def read_by_pattern(self) -> dict[str, list[str]]:
        """The fields the pattern reads, by what it names them as: a transform may make them
        (then Spark checks them at `plan` and before a run, having run it over no rows)."""
        return {}

    def read_before_transform(self) -> dict[str, list[str]]:
        """The event fields (or paths) the flow reads before a transform, by what it names them
        as (a computed column's name among them, for what reads it after it is computed)."""
        named = {"event time": [self.source.event_time.column], "required": list(self.source.required)}
        named |= {f"rule {rule.name!r} field": list(rule.fields) for rule in self.rules_for(self.source)}
        named |= {"enrich key": [self.enrich.key]} if self.enrich else {}
        named |= {f"column {name!r} field": list(self.column_reads(name)) for name in self.columns}
        return named | ({"where field": list(self.where_reads)} if self.where else {})

    def rules_for(self, source: Source) -> tuple[Rule, ...]:
        """The rules on `source`'s records: every rule, but in a join, those whose fields
        are all that source's (a rule on the join key only is on both)."""
        return self.rules

    def computed_for(self, index: int) -> Computes:
        """The computed columns and filter of source `index` (0: the pipeline's own, 1: a join's second)."""
        return self

    @property
    def filters(self) -> bool:
        """Whether a `where` or a transform filters any source's events."""
        return self.transform is not None or any(self.computed_for(i).where for i in range(len(self.sources)))

    def refused_fields(self) -> list[str]:
        """Each field the declaration names that the source's schema (declared, or inferred
        and recorded) has no field for, and why, in one line each."""
        # What the parse adds is there too: the event time, parsed (`event_time`).
        added = {EVENT_TIME, *(self.enrich.columns if self.enrich else ()), *self.columns}
        refused = [
            f"{what} {path!r} {why}"
            for what, paths in (
                self.read_before_transform() | ({} if self.transform else self.read_by_pattern())
            ).items()
            for path in paths
            if path.split(".")[0] not in added and (why := self._refuse_path(path))
        ]
        return list(dict.fromkeys(refused))  # two aggregates of one column: said once

    def _refuse_path(self, path: str) -> str | None:
        """Why a path names no field, with the computed columns among what it may mean."""
        why = self.source.refuse_path(path)
        if why and self.columns and "did you mean" not in why:
            return why + did_you_mean(path, list(self.columns))
        return why

    def _watermark_needed(self) -> list[str]:
        return [WATERMARK_NEEDED] if self.watermark_s is None else []


def _refuse(raw: Any, settings: tuple[str, ...], why: str) -> Any:
    """A setting another pattern has, with the reason it does not apply here."""
    present = [s for s in settings if isinstance(raw, dict) and raw.get(s)]
    if present:
        raise ValueError(f"'{present[0]}' {why}")
    return raw


class WindowPipeline(PipelineBase):
    pattern: Literal["window"] = "window"
    window: Window
    keys: tuple[Key, ...]
    aggregates: tuple[Aggregate, ...]
    # Records with equal values in these fields count once (the first to arrive), while
    # the watermark has not passed the first one's event time by the watermark delay.
    deduplicate: tuple[FieldPath, ...] = ()

    partition_column: ClassVar[str | None] = "window_date"
    partition_meaning: ClassVar[str] = "window_start"

    @field_validator("deduplicate", mode="before")
    @classmethod
    def _list_of_fields(cls, value: Any) -> Any:
        if value is not None and (not isinstance(value, list | tuple) or not all(isinstance(c, str) for c in value)):
            raise ValueError("is a list of source fields, e.g. [event_id]")
        return value or ()

    def read_by_pattern(self) -> dict[str, list[str]]:
        aggregated = [path for a in self.aggregates for path in a.reads]
        keys = [k.path for k in self.keys]
        return {
            "key": keys,
            "aggregate column": aggregated,
            "deduplicate field": list(self.deduplicate),
        }

    def _problems(self) -> list[str]:
        # Every field named exists (an inferred schema: checked by the first run, jobs/flow/source.py).
        problems = [*super()._problems(), *self._watermark_needed(), *self.refused_fields()]
        problems += [
            f"deduplicate field {column!r} must be a required source field"
            for column in self.deduplicate
            if column not in self.source.required and not self.source.refuse_path(column)
        ]
        if not self.aggregates:
            problems.append("declare at least one aggregate")
        columns = ["window_start", "window_end", *(k.name for k in self.keys), *(a.name for a in self.aggregates)]
        if len(set(columns)) != len(columns):
            problems.append(f"output column names collide: {columns}")
        return problems


class ProcessPipeline(PipelineBase):
    pattern: Literal["process"] = "process"
    keys: tuple[Key, ...]
    process: Process

    partition_column: ClassVar[str | None] = None

    @model_validator(mode="before")
    @classmethod
    def _no_aggregates(cls, raw: Any) -> Any:
        return _refuse(raw, ("aggregates", "window"), "needs a window pattern; a processor emits its own rows")

    @model_validator(mode="before")
    @classmethod
    def _rocksdb_for_own(cls, raw: Any) -> Any:
        return rocksdb_for_own(raw)

    def read_by_pattern(self) -> dict[str, list[str]]:
        reads = self.process.definition.inputs(self.process.settings)
        keys = [k.path for k in self.keys]
        return {"key": keys, f"processor {self.process.processor} input": reads}

    def _problems(self) -> list[str]:
        problems = super()._problems()
        if not self.keys:
            problems.append("a process needs 'keys': the processor keeps state per key")
        found = self.process.definition
        if found.event_time_timeout:
            own = f"; or, if {self.process.processor} registers no event-time timers, its time_mode = 'processing_time'"
            problems += [needed + (own if found.own else "") for needed in self._watermark_needed()]
        keys = {k.name for k in self.keys}
        problems += [
            f"processor output {c!r} is named like a key: a processor emits the keys, then its own columns"
            for c, _ in found.output(self.process.settings)
            if c in keys
        ]
        return problems + self.refused_fields()


class JoinPipeline(PipelineBase):
    pattern: Literal["join"] = "join"
    join: Join

    @property
    def sources(self) -> list[Source]:
        return [self.source, self.join.source]

    @model_validator(mode="before")
    @classmethod
    def _only_joined_events(cls, raw: Any) -> Any:
        why = "does not apply: a join writes the joined events; leave out keys, deduplicate and enrich"
        return _refuse(raw, ("keys", "deduplicate", "enrich"), why)

    def _problems(self) -> list[str]:
        problems = [*super()._problems(), *self._watermark_needed()]
        left, right = self.source, self.join.source
        if left.infer_schema or right.infer_schema:
            return [*problems, "both sides of a join need a declared schema"]
        if not left.name or not right.name or left.name == right.name:
            problems.append("give each source of a join a different 'name': its folder under the landing location")
        key_problems = self.join.key_problems(left)
        shared = sorted((set(left.fields) & set(right.fields)) - {self.join.key.split(".")[0]})
        if shared and not key_problems:  # with a key in neither, every field the sides share is named
            problems.append(f"fields {shared} are in both sources; the output keeps one column per name")
        problems += key_problems + self.join.side_problems()
        problems += [
            f"rule {rule.name!r} reads {list(rule.fields)}, which are not all fields of {left.name} "
            f"or all of {right.name}; a rule reads one source's records"
            for rule in self.rules
            if not any(self._reads_only(rule, side) for side in (left, right))
        ]
        return problems

    def computed_for(self, index: int) -> Computes:
        return self.join if index == 1 else self

    @staticmethod
    def _reads_only(rule: Rule, source: Source) -> bool:
        return not any(source.refuse_path(path) for path in rule.fields)

    def rules_for(self, source: Source) -> tuple[Rule, ...]:
        return tuple(rule for rule in self.rules if self._reads_only(rule, source))


class EventsPipeline(PipelineBase):
    pattern: Literal["events"] = "events"

    @model_validator(mode="before")
    @classmethod
    def _no_window_settings(cls, raw: Any) -> Any:
        why = "needs a 'window'; without one, each usable event is written"
        return _refuse(raw, ("keys", "aggregates", "deduplicate"), why)

    def _problems(self) -> list[str]:
        return [*super()._problems(), *self.refused_fields()]


def declared_pattern(raw: Any) -> str | None:
    """The declared pattern, or the one a declaration without `pattern:` implies."""
    if isinstance(raw, dict):
        return raw.get("pattern") or next(
            (p for p in ("window", "process", "join") if raw.get(p) is not None), "events"
        )
    return getattr(raw, "pattern", None)


Pipeline = Annotated[
    Union[  # noqa: UP007 - Annotated tags need the Union form
        Annotated[WindowPipeline, Tag("window")],
        Annotated[ProcessPipeline, Tag("process")],
        Annotated[JoinPipeline, Tag("join")],
        Annotated[EventsPipeline, Tag("events")],
    ],
    Discriminator(declared_pattern),
]
