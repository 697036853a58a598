"""Stateful processors: per-key logic that windows and aggregates cannot express.

A declaration names one (`process: {processor: NAME, settings: {...}}`) with its `keys`;
the runner groups the usable events by the keys and hands each group, with the state
Spark keeps for that key in the checkpoint, to the processor through
`applyInPandasWithState`. A processor says what it outputs, what it keeps, whether it
uses event-time timeouts, and what it needs from each event.

Nothing here imports Spark or pandas at module level: the declaration (and the Airflow
DAG files) read the output columns without them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from jobs.columns import EVENT_TIME


@dataclass(frozen=True)
class Processor:
    name: str
    description: str
    output: str  # DDL of the rows it emits, the keys first
    state: str  # DDL of what it keeps per key
    event_time_timeout: bool  # True: it closes things when the watermark passes them
    settings: dict[str, Any]  # the defaults; a declaration may override each
    inputs: Callable[[dict[str, Any]], list[str]]  # the event fields it reads, given the settings
    make: Callable[[dict[str, Any], list[str]], Callable]  # (settings, keys) -> the group function


def _rows(pdfs: Iterator, columns: list[str]):
    """The group's events of this batch as one pandas DataFrame, ordered by event time."""
    import pandas as pd

    frames = [frame for frame in pdfs if len(frame)]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True).sort_values(EVENT_TIME, kind="stable")


def _rack_status(settings: dict[str, Any], keys: list[str]) -> Callable:
    """NORMAL -> WARNING after `readings` consecutive readings at or over `threshold`;
    WARNING -> NORMAL at the next reading under it. Emits each change of status."""
    column, threshold, needed = settings["column"], float(settings["threshold"]), int(settings["readings"])
    columns = [*keys, "status", "changed_at", column, "consecutive_high"]

    def process(key: tuple, pdfs: Iterator, state) -> Iterator:
        import pandas as pd

        status, high = state.get if state.exists else ("NORMAL", 0)
        changes = []
        readings = _rows(pdfs, [EVENT_TIME, column])
        for moment, value in zip(readings[EVENT_TIME], readings[column], strict=True):
            high = high + 1 if value >= threshold else 0
            if status == "NORMAL" and high >= needed:
                status = "WARNING"
                changes.append((*key, status, moment, value, high))
            elif status == "WARNING" and high == 0:
                status = "NORMAL"
                changes.append((*key, status, moment, value, high))
        state.update((status, high))
        yield pd.DataFrame(changes, columns=columns)

    return process


def _spending_sessions(settings: dict[str, Any], keys: list[str]) -> Callable:
    """Sessions of transactions no more than `gap` apart; a session is emitted once the
    watermark passes its last transaction by more than `gap` (no more can join it).

    The state keeps the open sessions' transactions (time in microseconds, amount), so a
    transaction arriving out of order still joins, or bridges, the right session. They
    are kept as one JSON string: PySpark 4.2's Python worker cannot read an array in a
    state schema (KeyError 'elementType')."""
    from jobs.spec import parse_duration_s

    amount, gap_us = settings["amount"], parse_duration_s(settings["gap"], "spending sessions gap") * 1_000_000
    columns = [*keys, "session_start", "session_end", "total_amount", "transactions"]

    def process(key: tuple, pdfs: Iterator, state) -> Iterator:
        import pandas as pd

        pending = [tuple(t) for t in json.loads(state.get[0])] if state.exists else []
        if not state.hasTimedOut:
            rows = _rows(pdfs, [EVENT_TIME, amount])
            micros = rows[EVENT_TIME].astype("datetime64[us]").astype("int64")
            pending += list(zip(micros.tolist(), rows[amount].astype(float).tolist(), strict=True))
        pending.sort()
        sessions: list[list[tuple[int, float]]] = []
        for transaction in pending:
            if sessions and transaction[0] - sessions[-1][-1][0] <= gap_us:
                sessions[-1].append(transaction)
            else:
                sessions.append([transaction])
        watermark_us = state.getCurrentWatermarkMs() * 1000
        closed = [s for s in sessions if s[-1][0] + gap_us < watermark_us]
        still_open = [t for s in sessions if s[-1][0] + gap_us >= watermark_us for t in s]
        if still_open:
            state.update((json.dumps(still_open),))
            # Called again once the watermark passes the first open session's end + gap.
            state.setTimeoutTimestamp((min(s[-1][0] for s in sessions if s not in closed) + gap_us) // 1000)
        else:
            state.remove()
        out = [
            (*key, pd.Timestamp(s[0][0], unit="us"), pd.Timestamp(s[-1][0], unit="us"), sum(a for _, a in s), len(s))
            for s in closed
        ]
        yield pd.DataFrame(out, columns=columns)

    return process


PROCESSORS = {
    processor.name: processor
    for processor in (
        Processor(
            name="rack_status",
            description="status changes: WARNING after N consecutive high readings, NORMAL at the next low one",
            output="status string, changed_at timestamp, {column} double, consecutive_high int",
            state="status string, high int",
            event_time_timeout=False,
            settings={"column": "temperature", "threshold": 100, "readings": 3},
            inputs=lambda settings: [settings["column"]],
            make=_rack_status,
        ),
        Processor(
            name="spending_sessions",
            description="one row per closed session: transactions no more than `gap` apart",
            output="session_start timestamp, session_end timestamp, total_amount double, transactions int",
            state="transactions string",
            event_time_timeout=True,
            settings={"amount": "amount", "gap": "1 hour"},
            inputs=lambda settings: [settings["amount"]],
            make=_spending_sessions,
        ),
    )
}


def output_ddl(processor: Processor, settings: dict[str, Any]) -> str:
    """The processor's output columns after the keys, with its settings filled in."""
    return processor.output.format(**settings)


def output_columns(processor: Processor, settings: dict[str, Any], keys: list[str]) -> list[str]:
    return [*keys, *(part.split()[0] for part in output_ddl(processor, settings).split(","))]
