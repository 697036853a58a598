"""A processor's group function that cannot fail the batch (the process pattern's guard).

Runs in Spark's Python workers, so it imports nothing of the declarations: a cluster's
executors have Spark's Python and the shipped `jobs` package, not every library the
driver has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs.columns import BLOCK_START, LINE_NUMBER, SOURCE_FILE

if TYPE_CHECKING:
    from jobs.flow.tally import FileCount, Tally

# Where each row was read: handed to the guard with the processor's inputs.
WHERE = (SOURCE_FILE, BLOCK_START, LINE_NUMBER)


@dataclass(frozen=True)
class Guarded:
    """A processor's group function that cannot fail the batch: when it raises for a key,
    the key's rows of this batch are counted as quarantined in the tally (processor_error,
    with the exception), nothing it wrote to the state is applied, and it emits nothing."""

    function: Callable[[tuple, Iterator[Any], Any], Iterator[Any]]
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
        for file, start, number in zip(*(frame[c].tolist() for c in WHERE), strict=True):
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


class ProcessorCodeError(RuntimeError):
    """A team's processor that fails whatever the rows: the batch fails, naming it, and the
    run after a fix redoes it (no file to quarantine: jobs/run/failure.py tells it apart)."""


def guarded_processor(
    own: type, settings: Any, name: str, columns: list[str], output: list[str], tally: Tally | None
) -> Any:
    """A team's own processor class (jobs/processors/own.py) as Spark's StatefulProcessor, one
    instance per task with the declaration's settings. Each key's events (`columns`) reach it
    without the product's columns of where they were read; when it raises for a key, with a
    tally, the key's rows of this batch are counted as quarantined (processor_error, with the
    exception) and it emits nothing for them. What it wrote to the state before raising
    stays: Spark's state handle applies each write as it is made (write the state last). A
    frame it yields without its `output` columns, and a timer handler that raises, fail the
    batch (ProcessorCodeError)."""
    from pyspark.sql.streaming import StatefulProcessor

    def checked(frames: Iterator[Any], key: tuple) -> Iterator[Any]:
        for frame in frames:
            missing = [c for c in output if c not in frame.columns]
            if missing:
                raise ProcessorCodeError(
                    f"processor {name} yielded a frame without {missing} for key {list(key)}: each frame holds "
                    f"{output} (the keys, then its output); fix its code, and the next run redoes the batch"
                )
            yield frame[output]

    class Guarded(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.processor = own(settings)
            self.processor.init(handle)

        def handleInputRows(self, key: tuple, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            frames = [frame.set_axis(columns, axis=1) for frame in rows]  # pyspark 4.2 renames '_x' to '_3'
            given = (frame.drop(columns=[c for c in WHERE if c in columns]) for frame in frames)
            if tally is None:
                yield from checked(self.processor.handleInputRows(key, given, timerValues), key)
                return
            try:
                out = list(self.processor.handleInputRows(key, given, timerValues))
            except Exception as error:  # noqa: BLE001 - one key's failure is that key's rows, not the batch's
                detail = f"{name} failed for key {list(key)}: {type(error).__name__}: {str(error)[:300]}"
                tally.add(quarantined_rows(frames, "processor_error", detail))
                return
            yield from checked(iter(out), key)

        def handleExpiredTimer(self, key: tuple, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
            try:
                out = list(self.processor.handleExpiredTimer(key, timerValues, expiredTimerInfo))
            except Exception as error:  # noqa: BLE001 - whatever a team's timer handler raises
                raise ProcessorCodeError(
                    f"processor {name} failed in handleExpiredTimer for key {list(key)} "
                    f"({type(error).__name__}: {str(error)[:300]}): no row to quarantine; fix its code, "
                    "and the next run redoes the batch"
                ) from None
            yield from checked(iter(out), key)

        def close(self) -> None:
            self.processor.close()

    return Guarded()
