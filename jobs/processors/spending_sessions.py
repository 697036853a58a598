"""spending_sessions: a user's transactions, grouped until `gap` passes without one.

A session is emitted once the watermark passes its last transaction by more than `gap`
(no more can join it), with an event-time timeout to be called back then. The state
keeps the open sessions' transactions (time in microseconds, amount), so a transaction
arriving out of order still joins, or bridges, the right session. They are kept as one
JSON string: PySpark 4.2's Python worker cannot read an array in a state schema
(KeyError 'elementType').
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import Field

from jobs.columns import EVENT_TIME
from jobs.processors.base import GroupFunction, Processor, ProcessorSettings, events_in_time_order
from jobs.units import ColumnName, Duration

Transaction = tuple[int, float]  # (event time in microseconds, amount)


class SpendingSessionsSettings(ProcessorSettings):
    amount: ColumnName = "amount"  # what a transaction spends
    gap_s: Duration = Field(3600, alias="gap")  # a longer pause ends the session


def sessions_of(transactions: list[Transaction], gap_us: int) -> list[list[Transaction]]:
    """Transactions in time order, split where the pause between two exceeds the gap."""
    sessions: list[list[Transaction]] = []
    for transaction in sorted(transactions):
        if sessions and transaction[0] - sessions[-1][-1][0] <= gap_us:
            sessions[-1].append(transaction)
        else:
            sessions.append([transaction])
    return sessions


def spending_sessions(settings: SpendingSessionsSettings, keys: list[str]) -> GroupFunction:
    gap_us = settings.gap_s * 1_000_000
    columns = [*keys, "session_start", "session_end", "total_amount", "transactions"]

    def process(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        import pandas as pd

        pending = [tuple(t) for t in json.loads(state.get[0])] if state.exists else []
        if not state.hasTimedOut:
            rows = events_in_time_order(pdfs, [EVENT_TIME, settings.amount])
            micros = rows[EVENT_TIME].astype("datetime64[us]").astype("int64")
            pending += list(zip(micros.tolist(), rows[settings.amount].astype(float).tolist(), strict=True))
        watermark_us = state.getCurrentWatermarkMs() * 1000
        closed, still_open = [], []
        for session in sessions_of(pending, gap_us):
            (closed if session[-1][0] + gap_us < watermark_us else still_open).append(session)
        if still_open:
            state.update((json.dumps([t for session in still_open for t in session]),))
            # Called again once the watermark passes the first open session's end + gap.
            state.setTimeoutTimestamp((min(s[-1][0] for s in still_open) + gap_us) // 1000)
        else:
            state.remove()
        out = [
            (*key, pd.Timestamp(s[0][0], unit="us"), pd.Timestamp(s[-1][0], unit="us"), sum(a for _, a in s), len(s))
            for s in closed
        ]
        yield pd.DataFrame(out, columns=columns)

    return process


PROCESSOR = Processor(
    name="spending_sessions",
    description="one row per closed session: transactions no more than `gap` apart",
    settings=SpendingSessionsSettings,
    output=lambda settings: [
        ("session_start", "timestamp"),
        ("session_end", "timestamp"),
        ("total_amount", "double"),
        ("transactions", "int"),
    ],
    state=[("transactions", "string")],
    event_time_timeout=True,
    inputs=lambda settings: [settings.amount],
    function=spending_sessions,
)
