"""rack_status: a rack's status changes, from a run of consecutive readings.

NORMAL -> WARNING after `readings` consecutive readings at or over `threshold`;
WARNING -> NORMAL at the next reading under it. Emits each change of status. The state
per key is the status and the run of high readings so far; no event-time timeout.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import PositiveInt

from jobs.columns import EVENT_TIME
from jobs.processors.base import GroupFunction, Processor, ProcessorSettings, events_in_time_order
from jobs.units import ColumnName


class RackStatusSettings(ProcessorSettings):
    column: ColumnName = "temperature"  # the reading
    threshold: float = 100  # a reading at or over this is high
    readings: PositiveInt = 3  # this many high readings in a row raise a WARNING


def rack_status(settings: RackStatusSettings, keys: list[str]) -> GroupFunction:
    columns = [*keys, "status", "changed_at", settings.column, "consecutive_high"]

    def process(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        import pandas as pd

        status, high = state.get if state.exists else ("NORMAL", 0)
        changes = []
        readings = events_in_time_order(pdfs, [EVENT_TIME, settings.column])
        for moment, value in zip(readings[EVENT_TIME], readings[settings.column], strict=True):
            high = high + 1 if value >= settings.threshold else 0
            if status == "NORMAL" and high >= settings.readings:
                status = "WARNING"
                changes.append((*key, status, moment, value, high))
            elif status == "WARNING" and high == 0:
                status = "NORMAL"
                changes.append((*key, status, moment, value, high))
        state.update((status, high))
        yield pd.DataFrame(changes, columns=columns)

    return process


PROCESSOR = Processor(
    name="rack_status",
    description="status changes: WARNING after N consecutive high readings, NORMAL at the next low one",
    settings=RackStatusSettings,
    output=lambda settings: [
        ("status", "string"),
        ("changed_at", "timestamp"),
        (settings.column, "double"),
        ("consecutive_high", "int"),
    ],
    state=[("status", "string"), ("high", "int")],
    event_time_timeout=False,
    inputs=lambda settings: [settings.column],
    function=rack_status,
)
