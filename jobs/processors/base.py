"""What a processor is: its settings, what it emits and keeps, and its function."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from jobs.columns import EVENT_TIME

# (key, the key's events of this batch as pandas DataFrames, its GroupState) -> output frames
GroupFunction = Callable[[tuple, Iterator[Any], Any], Iterator[Any]]
Columns = list[tuple[str, str]]  # (name, Spark SQL type): what a processor emits or keeps


def ddl(columns: Columns) -> str:
    """The columns as Spark's DDL, each name quoted (a name may hold a space or a comma)."""
    return ", ".join(f"`{name.replace('`', '``')}` {type_}" for name, type_ in columns)


class ProcessorSettings(BaseModel):
    """A processor's settings: unknown ones are refused when the declaration loads."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


@dataclass(frozen=True)
class Processor:
    name: str
    description: str
    settings: type[ProcessorSettings]  # its settings with their defaults; a declaration may set each
    output: Callable[[Any], Columns]  # the columns it emits after the keys, given the settings
    state: Columns  # what it keeps per key
    event_time_timeout: bool  # True: it closes things when the watermark passes them
    inputs: Callable[[Any], list[str]]  # the event fields it reads, given the settings
    function: Callable[[Any, list[str]], GroupFunction] | None  # (settings, keys) -> the group function
    own: type | None = None  # a team's own class (jobs/processors/own.py), run by transformWithStateInPandas

    def output_columns(self, settings: ProcessorSettings, keys: list[str]) -> list[str]:
        return [*keys, *(name for name, _ in self.output(settings))]


def events_in_time_order(pdfs: Iterator[Any], columns: list[str]):
    """A group's events of this batch as one pandas DataFrame, ordered by event time."""
    import pandas as pd

    frames = [frame for frame in pdfs if len(frame)]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True).sort_values(EVENT_TIME, kind="stable")
