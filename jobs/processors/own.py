"""A processor of a team's own: a class in its declarations folder (or an installed package),
run by Spark's `transformWithStateInPandas`, with value, list and map state, timers and TTL.

    process: {processor: my_processors:Sessions, settings: {gap: 30 minutes}}

The class subclasses StatefulProcessor below, which is Spark's own interface (init,
handleInputRows, handleExpiredTimer, close: Spark's documentation applies as written) with
what the product needs to know before Spark starts, as class attributes:

    Settings    its settings model (a ProcessorSettings): checked when the declaration loads
    output      the columns it emits after the keys, as (name, Spark SQL type) pairs
    inputs      the event fields it reads besides the keys and `event_time`
    time_mode   "event_time" (the default: event-time timers, the declaration's watermark
                drops late events) or "processing_time" (wall-clock timers, and TTL on
                state, which Spark allows only there)

Nothing here imports Spark, so that a declaration loads (its module imported, its settings
checked) where Spark is not, as in Airflow's DAG files; keep Spark imports of the module
inside its methods. At run time the product wraps the class in Spark's StatefulProcessor
(jobs/flow/guard.py), each task making one instance with the declaration's settings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, ClassVar

from pydantic import TypeAdapter, ValidationError

from jobs.processors.base import Columns, Processor, ProcessorSettings
from jobs.units import ColumnName

TIME_MODES = {"event_time": "EventTime", "processing_time": "ProcessingTime"}  # ours -> Spark's


class StatefulProcessor:
    """Subclass this, and write the methods as Spark's documentation of its StatefulProcessor
    says (pyspark.sql.streaming.StatefulProcessor): `self.settings` holds the declaration's."""

    Settings: ClassVar[type[ProcessorSettings]] = ProcessorSettings  # none, unless a class declares its own
    output: ClassVar[Columns] = []
    inputs: ClassVar[tuple[str, ...]] = ()
    time_mode: ClassVar[str] = "event_time"

    def __init__(self, settings: ProcessorSettings):
        self.settings = settings

    def init(self, handle: Any) -> None:
        """Once per task: get the state (handle.getValueState, getListState, getMapState)."""

    def handleInputRows(self, key: tuple, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        """A key's events of this batch (pandas DataFrames): yield pandas DataFrames of the keys and `output`."""
        raise NotImplementedError(f"{type(self).__name__} must define handleInputRows")

    def handleExpiredTimer(self, key: tuple, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
        """A timer registered for `key` has expired: yield what it closes (nothing, unless defined)."""
        return iter(())

    def close(self) -> None:
        """Once per task, at its end."""


class _Recorder:
    """A state handle that records what `init` asks for, and gives nothing: its shape."""

    def __init__(self):
        self.state: dict[str, str] = {}

    def getValueState(self, name: str, schema: Any, ttlDurationMs: int | None = None) -> None:
        self.state[name] = f"value {schema}" + (" with TTL" if ttlDurationMs else "")

    def getListState(self, name: str, schema: Any, ttlDurationMs: int | None = None) -> None:
        self.state[name] = f"list {schema}" + (" with TTL" if ttlDurationMs else "")

    def getMapState(self, name: str, userKeySchema: Any, valueSchema: Any, ttlDurationMs: int | None = None) -> None:
        self.state[name] = f"map {userKeySchema} -> {valueSchema}" + (" with TTL" if ttlDurationMs else "")

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None  # timers, the query's info: not state


def state_of(own: type, settings: ProcessorSettings) -> dict[str, str] | None:
    """What a class keeps, as its `init` asks Spark for it (name -> kind, schema, TTL or not),
    learnt without Spark from a handle that records; None: its `init` needs more than that."""
    recorder = _Recorder()
    try:
        own(settings).init(recorder)
    except Exception:  # noqa: BLE001 - an init that reads what only Spark gives: Spark checks its state itself
        return None
    return dict(sorted(recorder.state.items()))


_SCALARS = re.compile(
    r"(boolean|tinyint|byte|smallint|short|int|integer|bigint|long|float|real|double|date|string|binary|variant"
    r"|timestamp|timestamp_ltz|timestamp_ntz|(decimal|dec|numeric)(\(\d+(,\d+)?\))?|(var)?char\(\d+\))",
    re.IGNORECASE,
)


def _split(inner: str) -> list[str]:
    """`inner` split at its top-level commas (not those inside <...> or (...))."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(inner):
        depth += (char in "<(") - (char in ">)")
        if char == "," and depth == 0:
            parts.append(inner[start:at])
            start = at + 1
    return [*parts, inner[start:]]


def _typed(text: str) -> bool:
    """Whether `text` is a Spark SQL type, as Spark's DDL writes one (checked here, where
    Spark is not: a wrong one would otherwise fail the first run, after it started)."""
    text = re.sub(r"\s*([<>(),:])\s*", r"\1", text.strip()) if isinstance(text, str) else ""
    if _SCALARS.fullmatch(text):
        return True
    outer, _, inner = text.partition("<")
    if not inner.endswith(">"):
        return False
    parts = _split(inner[:-1])
    match outer.lower():
        case "array":
            return len(parts) == 1 and _typed(parts[0])
        case "map":
            return len(parts) == 2 and all(_typed(p) for p in parts)
        case "struct":
            fields = [p.partition(":") if ":" in p else p.partition(" ") for p in parts]  # `a: int` or `a int`
            return all(name and _typed(kind) for name, _, kind in fields)
    return False


def _plain(column: object) -> bool:
    try:
        TypeAdapter(ColumnName).validate_python(column)
    except ValidationError:
        return False
    return True


def definition(name: str, found: object) -> Processor:
    """The product's view of the class `name` (module:Class) names; ValueError saying what
    is wrong with it."""
    if not (isinstance(found, type) and issubclass(found, StatefulProcessor)):
        raise ValueError(
            f"processor {name!r} is not a subclass of jobs.processors.own.StatefulProcessor (docs/python.md)"
        )
    problems = []
    if not (isinstance(found.Settings, type) and issubclass(found.Settings, ProcessorSettings)):
        problems.append("its Settings must subclass jobs.processors.base.ProcessorSettings")
    if not found.output or not all(isinstance(c, tuple) and len(c) == 2 for c in found.output):
        problems.append("its output must list the columns it emits after the keys, as (name, type) pairs")
    else:
        problems += [f"{column!r} is not a plain column name" for column, _ in found.output if not _plain(column)]
        problems += [
            f"{column!r} has type {kind!r}, which is not a Spark SQL type (string, bigint, double, "
            "timestamp, decimal(p,s), array<...>, map<...,...>, struct<name:type,...>)"
            for column, kind in found.output
            if not _typed(kind)
        ]
    if found.time_mode not in TIME_MODES:
        problems.append(f"its time_mode must be one of {sorted(TIME_MODES)}, not {found.time_mode!r}")
    if problems:
        raise ValueError(f"processor {name!r}: " + "; ".join(problems))
    return Processor(
        name=name,
        description=(found.__doc__ or "").strip().split("\n")[0],
        settings=found.Settings,
        output=lambda settings: list(found.output),
        state=[],  # what it keeps, it says to Spark in `init`; Spark checks a changed one against the checkpoint
        event_time_timeout=found.time_mode == "event_time",
        inputs=lambda settings: list(found.inputs),
        function=None,
        own=found,
    )
