"""An independent model of what the clickstream pipeline must produce, in plain Python.

It shares no code with `jobs/`: it parses lines with `json` and `datetime`, and follows
Structured Streaming's documented rules for append-mode windowed aggregation:
- each batch runs with the watermark computed after the batch before it;
- an input row is dropped as late when its window ended at or before the watermark of
  the batch before its own (Spark 3.4+: late rows against the previous batch's
  watermark, state eviction against the current one);
- the watermark after a batch is max(previous, newest event time so far - delay);
- a window is written once, when its end is at or before the watermark.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def event_time(line: str) -> datetime | None:
    """The event time of a usable clickstream record, or None if it must be quarantined."""
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict) or not record.get("user_id") or not record.get("eventtimestamp"):
        return None
    try:
        moment = datetime.fromisoformat(record["eventtimestamp"])
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class BatchResult:
    input_rows: int = 0
    quarantined_rows: int = 0
    late_rows_dropped: int = 0
    aggregated_rows: int = 0
    emitted: dict[tuple[datetime, str], int] = field(default_factory=dict)


@dataclass
class ClickstreamModel:
    delay: timedelta = timedelta(minutes=5)
    window: timedelta = timedelta(minutes=1)
    previous_ran_with: datetime = EPOCH  # the watermark the previous batch ran with
    next_watermark: datetime = EPOCH  # the watermark the next batch runs with
    newest: datetime = EPOCH
    state: Counter = field(default_factory=Counter)
    table: dict[tuple[datetime, str], int] = field(default_factory=dict)

    def window_start(self, moment: datetime) -> datetime:
        seconds = self.window.total_seconds()
        return EPOCH + timedelta(seconds=(moment - EPOCH).total_seconds() // seconds * seconds)

    def _batch(self, lines: list[str], result: BatchResult) -> None:
        ran_with = self.next_watermark
        for line in lines:
            if not line.strip():
                continue
            result.input_rows += 1
            moment = event_time(line)
            if moment is None:
                result.quarantined_rows += 1
                continue
            self.newest = max(self.newest, moment)
            start = self.window_start(moment)
            if start + self.window <= self.previous_ran_with:
                result.late_rows_dropped += 1
                continue
            result.aggregated_rows += 1
            self.state[(start, json.loads(line)["user_id"])] += 1
        for key in sorted(self.state):
            if key[0] + self.window <= ran_with:
                result.emitted[key] = self.state.pop(key)
        self.previous_ran_with = ran_with
        self.next_watermark = max(ran_with, self.newest - self.delay)

    def run(self, batches: list[list[str]], trailing_batch: bool = True) -> BatchResult:
        """One availableNow run: these data batches, then a no-data batch if the watermark
        moved (trigger once: `trailing_batch=False`). A run with no new data runs nothing."""
        result = BatchResult()
        for lines in batches:
            self._batch(lines, result)
        if batches and trailing_batch and self.next_watermark > self.previous_ran_with:
            self._batch([], result)
        self.table.update(result.emitted)
        return result

    def rows(self) -> list[tuple[datetime, datetime, str, int]]:
        """The table so far, as (window_start, window_end, user_id, event_count), sorted."""
        return sorted((start, start + self.window, user, count) for (start, user), count in self.table.items())

    def closed_range_rows(self) -> list[tuple[datetime, datetime, str, int]]:
        """The table plus every window still held in state: a closed range's whole result."""
        held = {key: count for key, count in self.state.items() if count}
        return sorted(
            (start, start + self.window, user, count) for (start, user), count in {**self.table, **held}.items()
        )
