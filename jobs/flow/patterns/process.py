"""process: each key's events, with the state Spark keeps for the key, through a declared
processor (jobs/processors/, run with `applyInPandasWithState`); what it emits is appended.

Late rows: a processor with event-time timeouts runs on watermarked events, so an event
at or before the watermark is dropped, whole; without timeouts there is no watermark and
nothing is late.

A processor that raises for one key does not fail the batch (`Guarded`): that key's rows
of the batch are quarantined as processor_error with the exception, its state is left as
it was (what the call wrote to it is not applied), and the other keys go on. Its events
reach pandas, whose timestamps end in 2262: an event time pandas cannot hold is
quarantined before (event_time_out_of_range), rather than failing the batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs.columns import BLOCK_START, EVENT_TIME, LINE_NUMBER, SOURCE_FILE
from jobs.declare import ProcessPipeline
from jobs.flow.patterns.base import Pattern
from jobs.processors.base import GroupFunction
from jobs.units import spark_duration

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from jobs.flow.tally import FileCount, Tally

# Where each row was read, handed to the guard with the processor's inputs.
_WHERE = (SOURCE_FILE, BLOCK_START, LINE_NUMBER)
# What pandas' datetime64[ns] holds: 1677-09-21T00:12:43.145224192 to 2262-04-11T23:47:16.854775807.
PANDAS_TIMES = ("1677-09-22 00:00:00", "2262-04-11 00:00:00")


class ProcessPattern(Pattern):
    pipeline: ProcessPipeline

    @property
    def processor(self):
        return self.pipeline.process.definition

    def output_columns(self) -> list[str]:
        return self.processor.output_columns(self.pipeline.process.settings, list(self.pipeline.keys))

    def describe(self) -> str:
        settings = self.pipeline.process.settings.model_dump(by_alias=True)
        return f"processor {self.processor.name} per {', '.join(self.pipeline.keys)} {settings}"

    @property
    def stateful_operators(self) -> int:
        return 1

    def contract(self) -> dict[str, Any]:
        # The processor's state layout is fixed; its settings may change.
        return super().contract() | {"keys": list(self.pipeline.keys), "processor": self.processor.name}

    @property
    def backfill_refusal(self) -> str | None:
        return (
            f"a range leaves {self.processor.name}'s state open (e.g. sessions, statuses), and nothing finalizes it: "
            "run it on a fresh --root over the landing range instead (--landing-since/--landing-until)"
        )

    def refusals(self) -> list[tuple[Column, str, Column]]:
        from pyspark.sql import functions as F

        outside = ~F.col(EVENT_TIME).between(*(F.lit(t).cast("timestamp") for t in PANDAS_TIMES))
        detail = F.concat(
            F.lit("event time "),
            F.col(EVENT_TIME).cast("string"),
            F.lit(f" is outside what the processor's pandas holds ({PANDAS_TIMES[0][:10]} to {PANDAS_TIMES[1][:10]})"),
        )
        return [(outside, "event_time_out_of_range", detail)]

    def table(self, *events: DataFrame, tally: Tally | None = None) -> DataFrame:
        from pyspark.sql.streaming.state import GroupStateTimeout

        pipeline, processor = self.pipeline, self.processor
        settings = pipeline.process.settings
        where = [c for c in _WHERE if c in events[0].columns]
        inputs = events[0].select(*pipeline.keys, EVENT_TIME, *processor.inputs(settings), *where)
        timeout = GroupStateTimeout.NoTimeout
        if processor.event_time_timeout:
            inputs = inputs.withWatermark(EVENT_TIME, spark_duration(pipeline.watermark_s))
            timeout = GroupStateTimeout.EventTimeTimeout
        keys_ddl = ", ".join(f"`{key}` {inputs.schema[key].dataType.simpleString()}" for key in pipeline.keys)
        function = processor.function(settings, list(pipeline.keys))
        return inputs.groupBy(*pipeline.keys).applyInPandasWithState(
            Guarded(function, processor.name, tally) if tally is not None and len(where) == 3 else function,
            f"{keys_ddl}, {processor.output(settings)}",
            processor.state,
            "append",
            timeout,
        )

    def late_at(self, event_time: Column) -> Column | None:
        return event_time if self.processor.event_time_timeout else None


@dataclass(frozen=True)
class Guarded:
    """A processor's group function that cannot fail the batch: when it raises for a key,
    the key's rows of this batch are counted as quarantined in the tally (processor_error,
    with the exception), nothing it wrote to the state is applied, and it emits nothing."""

    function: GroupFunction
    processor: str
    tally: Tally

    def __call__(self, key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        frames = list(pdfs)
        writes = _StateWrites(state)
        try:
            out = list(self.function(key, iter(frames), writes))
        except Exception as error:  # noqa: BLE001 - one key's failure is that key's rows, not the batch's
            detail = f"{self.processor} failed for key {list(key)}: {type(error).__name__}: {str(error)[:300]}"
            self.tally.add(quarantined_rows(frames, "processor_error", detail))
            return
        writes.apply()
        yield from out


def quarantined_rows(frames: list[Any], reason: str, detail: str) -> dict[str, FileCount]:
    """The rows of these frames (with SOURCE_FILE, BLOCK_START, LINE_NUMBER), as quarantined
    records of their files; their lines stay in the files, at their numbers."""
    from jobs.flow.tally import FileCount, Quarantined

    files: dict[str, FileCount] = {}
    for frame in frames:
        for file, start, number in zip(*(frame[c].tolist() for c in _WHERE), strict=True):
            files.setdefault(file, FileCount()).quarantined.append(Quarantined(start, number, None, reason, detail))
    return files


class _StateWrites:
    """A GroupState whose reads go to the real one and whose writes wait for `apply`."""

    _WRITES = ("update", "remove", "setTimeoutTimestamp", "setTimeoutDuration")

    def __init__(self, state: Any):
        self._state = state
        self._pending: list[tuple[str, tuple]] = []

    def __getattr__(self, name: str) -> Any:
        if name in self._WRITES:
            return lambda *args: self._pending.append((name, args))
        return getattr(self._state, name)

    def apply(self) -> None:
        for name, args in self._pending:
            getattr(self._state, name)(*args)
