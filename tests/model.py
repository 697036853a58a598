"""Independent models of what the pipelines must produce, in plain Python.

They share no code with `jobs/`: they parse lines with `json` and `datetime`, and follow
Structured Streaming's documented rules for append-mode windowed aggregation:
- each batch runs with the watermark computed after the batch before it;
- an input row's contribution to a window is dropped as late when the window ended at
  or before the watermark of the batch before its own (Spark 3.4+: late rows against the
  previous batch's watermark, state eviction against the current one); with sliding
  windows a row can be late for its older window and still count in a newer one;
- the watermark after a batch is max(previous, newest event time so far - delay);
- a window is written once, when its end is at or before the watermark;
- deduplication within the watermark (when a model has `identity`) comes first: a row
  whose event time is at or before the previous batch's watermark is late; a row whose
  identity was seen and is still kept is a duplicate; an identity is kept until the
  watermark reaches its first event time + the delay.

Row rules are learnt from the declaration's YAML and evaluated by DuckDB (the product has
Spark evaluate them): a usable record breaks a rule when its check is false (not null); it
counts against every rule it breaks, is quarantined when one of them says quarantine, and
stops the batch when one says fail.

What a record must be to be used, as the README states it: strict JSON (no NaN or
Infinity, no lone surrogate escapes) nested at most 64 deep; each declared field of its
declared JSON type and range (a long within 64 bits, a double finite); an event time from
year 1 to 9999 and at most a day after now (the batch's time); for a processor, within
what pandas holds (1677-09-22 to 2262-04-11).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import yaml

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_DEPTH = 64
MAX_FUTURE = timedelta(days=1)
PANDAS_TIMES = (datetime(1677, 9, 22, tzinfo=UTC), datetime(2262, 4, 11, tzinfo=UTC))


@dataclass(frozen=True)
class Reading:
    """A usable record: its event time, the values of the keys, the value aggregated."""

    moment: datetime
    key: tuple
    value: Any = None


def nesting_depth(line: str) -> int:
    """How deep objects and arrays nest (brackets in strings do not count), without recursing."""
    deepest = level = 0
    in_string = escaped = False
    for char in line:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            level += 1
            deepest = max(deepest, level)
        elif char in "]}":
            level -= 1
    return deepest


def _no_constant(name: str) -> None:
    raise ValueError(name)


def text_ok(value: Any) -> bool:
    """No lone surrogate in any string, key or value."""
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return all(text_ok(k) and text_ok(v) for k, v in value.items())
    return all(text_ok(v) for v in value) if isinstance(value, list) else True


def record(line: str) -> dict | None:
    """A JSON object, or None for a blank line, broken or too deep JSON or a non-object."""
    if nesting_depth(line) > MAX_DEPTH:
        return None
    try:
        value = json.loads(line, parse_constant=_no_constant)
    except ValueError:
        return None
    return value if isinstance(value, dict) and text_ok(value) else None


def iso_time(text: Any) -> datetime | None:
    """ISO-8601, in UTC; no zone means UTC; not more than a day in the future."""
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment if moment <= datetime.now(UTC) + MAX_FUTURE else None


def is_long(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def is_double(value: Any) -> bool:
    """A JSON number a double holds (1e999 is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def within_pandas(reading: Reading | None) -> Reading | None:
    """A processor's reading, None when pandas cannot hold its time."""
    return reading if reading is not None and PANDAS_TIMES[0] <= reading.moment <= PANDAS_TIMES[1] else None


def clickstream_reading(line: str) -> Reading | None:
    """A usable clickstream record, or None if it must be quarantined."""
    found = record(line)
    if found is None or not found.get("user_id"):
        return None
    if any(not isinstance(found.get(f), str | None) for f in ("event_id", "user_id", "event", "eventtimestamp")):
        return None
    moment = iso_time(found.get("eventtimestamp"))
    return Reading(moment, (found["user_id"],)) if moment else None


PIPELINES = Path(__file__).resolve().parent.parent / "jobs" / "pipelines"
_DUCKDB_TYPES = {"string": "VARCHAR", "long": "BIGINT", "int": "INTEGER", "double": "DOUBLE", "boolean": "BOOLEAN"}


def _duckdb_type(declared: Any) -> str:
    if isinstance(declared, dict):
        return "STRUCT(" + ", ".join(f'"{name}" {_duckdb_type(kind)}' for name, kind in declared.items()) + ")"
    if isinstance(declared, list):
        return _duckdb_type(declared[0]) + "[]"
    return _DUCKDB_TYPES.get(declared, declared.upper())


def _declared_only(value: Any, declared: Any) -> Any:
    """A JSON value with only the declared fields, at any depth (a missing one null)."""
    if isinstance(declared, dict):
        value = value if isinstance(value, dict) else {}
        return {name: _declared_only(value.get(name), kind) for name, kind in declared.items()}
    if isinstance(declared, list) and isinstance(value, list):
        return [_declared_only(item, declared[0]) for item in value]
    return value


class RuleStop(Exception):
    """A record broke a `fail` rule: the batch stops."""


@dataclass
class RuleBook:
    """A pipeline's rules from its YAML, each on the sources whose declared fields it
    reads (DuckDB refuses a check naming a field the source does not declare)."""

    rules: list[dict]
    schemas: list[dict]  # each source's declared fields
    _queries: dict[int, tuple[list[dict], str]] = field(default_factory=dict)

    @classmethod
    def of(cls, pipeline: str) -> RuleBook:
        raw = yaml.safe_load((PIPELINES / f"{pipeline}.yaml").read_text())
        sources = [raw["source"], *([raw["join"]["source"]] if raw.get("join") else [])]
        return cls(raw.get("rules") or [], [source["schema"] for source in sources])

    def _query(self, side: int) -> tuple[list[dict], str]:
        if side not in self._queries:
            struct = _duckdb_type(self.schemas[side])
            record = f"(SELECT unnest(CAST($record AS {struct})))"
            mine = []
            for rule in self.rules:
                try:
                    duckdb.sql(f"SELECT ({rule['check']}) FROM {record.replace('$record', 'NULL')}")
                    mine.append(rule)
                except duckdb.BinderException:
                    continue  # a field of the other source
            tests = ", ".join(f"coalesce(NOT ({rule['check']}), false)" for rule in mine) or "NULL"
            self._queries[side] = (mine, f"SELECT {tests} FROM {record}")
        return self._queries[side]

    def broken(self, found: dict) -> list[dict]:
        """The rules a usable record breaks, in declaration order."""
        if not self.rules:
            return []
        # A join's record is of the source whose declared fields it has the most of.
        side = max(range(len(self.schemas)), key=lambda i: len(set(found) & set(self.schemas[i])))
        mine, query = self._query(side)
        if not mine:
            return []
        outcome = duckdb.execute(query, {"record": _declared_only(found, self.schemas[side])}).fetchone()
        return [rule for rule, is_broken in zip(mine, outcome, strict=True) if is_broken]


def usable(lines: list[str], read: Callable[[str], Any], result: BatchResult, rules: RuleBook | None = None):
    """(line, what `read` made of it) for each usable line. Blank lines are not records;
    every other line is input, and quarantined when `read` gives None or it breaks a
    quarantining rule; a broken `fail` rule raises RuleStop."""
    for line in lines:
        if not line.strip():
            continue
        result.input_rows += 1
        found = read(line)
        if found is None:
            result.quarantined_rows += 1
            continue
        broken = rules.broken(record(line)) if rules else []
        for rule in broken:
            result.violations[rule["name"]] = result.violations.get(rule["name"], 0) + 1
        stops = [rule["name"] for rule in broken if rule["on_violation"] == "fail"]
        if stops:
            raise RuleStop(f"{stops[0]}: {line}")
        if any(rule["on_violation"] == "quarantine" for rule in broken):
            result.quarantined_rows += 1
            continue
        yield line, found


class AvailableNowRuns:
    """How a model runs: each run's data batches, then a no-data batch when the watermark
    moved, as Spark runs one with stateful operators. A run with no new data runs nothing.
    The model's `_batch(lines, result)` is one micro-batch."""

    def run(self, batches: list[list[str]], trailing_batch: bool = True) -> BatchResult:
        """One availableNow run (trigger once: `trailing_batch=False`)."""
        result = BatchResult()
        for lines in batches:
            self._batch(lines, result)
        if batches and trailing_batch and self.next_watermark > self.previous_ran_with:
            self._batch([], result)
        return result

    def run_batches(self, batches: list[list[str]]) -> list[BatchResult]:
        """One availableNow run, with each data batch's own result."""
        results = [BatchResult() for _ in batches]
        for lines, result in zip(batches, results, strict=True):
            self._batch(lines, result)
        if batches and self.next_watermark > self.previous_ran_with:
            self._batch([], BatchResult())
        return results


@dataclass
class BatchResult:
    input_rows: int = 0
    quarantined_rows: int = 0
    late_rows_dropped: int = 0
    used_rows: int = 0
    duplicates_dropped: int = 0
    violations: dict[str, int] = field(default_factory=dict)  # rule -> records that broke it
    emitted: dict[tuple[datetime, tuple], tuple] = field(default_factory=dict)


@dataclass
class WindowModel(AvailableNowRuns):
    """Append-mode windowed aggregation of one keyed value, tumbling or sliding.

    `read` turns a line into a Reading (None: quarantined); `finish` turns the values a
    window collected into its output columns.
    """

    read: Callable[[str], Reading | None]
    finish: Callable[[list], tuple]
    delay: timedelta
    window: timedelta
    slide: timedelta | None = None  # None: tumbling
    identity: Callable[[str], Any] | None = None  # deduplicate on this, when given
    rules: RuleBook | None = None
    previous_ran_with: datetime = EPOCH  # the watermark the previous batch ran with
    next_watermark: datetime = EPOCH  # the watermark the next batch runs with
    newest: datetime = EPOCH
    state: dict[tuple[datetime, tuple], list] = field(default_factory=dict)
    table: dict[tuple[datetime, tuple], tuple] = field(default_factory=dict)
    seen: dict[Any, datetime] = field(default_factory=dict)  # identity -> kept until

    @property
    def state_rows(self) -> int:
        return len(self.state) + len(self.seen)

    def window_starts(self, moment: datetime) -> list[datetime]:
        """Every window start s with s <= moment < s + window, s a multiple of the slide."""
        slide = (self.slide or self.window).total_seconds()
        last = EPOCH + timedelta(seconds=(moment - EPOCH).total_seconds() // slide * slide)
        starts = []
        while last + self.window > moment:
            starts.append(last)
            last -= timedelta(seconds=slide)
        return starts

    def _batch(self, lines: list[str], result: BatchResult) -> None:
        ran_with = self.next_watermark
        for line, reading in usable(lines, self.read, result, self.rules):
            self.newest = max(self.newest, reading.moment)
            if self.identity is not None:
                if reading.moment <= self.previous_ran_with:
                    result.late_rows_dropped += 1
                    continue
                identity = self.identity(line)
                if identity in self.seen:
                    result.duplicates_dropped += 1
                    continue
                self.seen[identity] = reading.moment + self.delay
            open_windows = [s for s in self.window_starts(reading.moment) if s + self.window > self.previous_ran_with]
            if not open_windows:
                result.late_rows_dropped += 1
                continue
            result.used_rows += 1
            for start in open_windows:
                self.state.setdefault((start, reading.key), []).append(reading.value)
        for key in sorted(self.state):
            if key[0] + self.window <= ran_with:
                result.emitted[key] = self.table[key] = self.finish(self.state.pop(key))
        self.seen = {identity: until for identity, until in self.seen.items() if until > ran_with}
        self.previous_ran_with = ran_with
        self.next_watermark = max(ran_with, self.newest - self.delay)

    def _rows(self, windows: dict[tuple[datetime, tuple], tuple]) -> list[tuple]:
        return sorted((start, start + self.window, *key, *values) for (start, key), values in windows.items())

    def rows(self) -> list[tuple]:
        """The table so far, as (window_start, window_end, *keys, *aggregates), sorted."""
        return self._rows(self.table)

    def closed_range_rows(self) -> list[tuple]:
        """The table plus every window still held in state: a closed range's whole result."""
        held = {key: self.finish(values) for key, values in self.state.items()}
        return self._rows({**self.table, **held})


def ClickstreamModel() -> WindowModel:
    """Events per user_id in 1-minute tumbling windows, watermark 5 minutes."""
    return WindowModel(
        read=clickstream_reading,
        finish=lambda values: (len(values),),
        delay=timedelta(minutes=5),
        window=timedelta(minutes=1),
        rules=RuleBook.of("clickstream"),
    )


def ClickstreamUniqueModel() -> WindowModel:
    """The clickstream model, each event_id counted once within the watermark."""

    def reading(line: str) -> Reading | None:
        found = record(line)
        return clickstream_reading(line) if found and found.get("event_id") else None

    model = ClickstreamModel()
    model.read = reading
    model.identity = lambda line: json.loads(line)["event_id"]
    model.rules = RuleBook.of("clickstream_unique")
    return model


def keyed_number(line: str, key: str, number: str, time_field: str) -> Reading | None:
    """A record with a non-empty `key`, a JSON number `number` and an ISO `time_field`."""
    found = record(line)
    if found is None or not found.get(key):
        return None
    value = found.get(number)
    if not is_double(value):
        return None
    moment = iso_time(found.get(time_field))
    return Reading(moment, (found[key],), float(value)) if moment else None


def rack_reading(line: str) -> Reading | None:
    return keyed_number(line, "rack", "temperature", "ts")


def RackTemperaturesModel() -> WindowModel:
    """Average and highest temperature and readings per rack, 10-minute windows sliding by 5."""
    return WindowModel(
        read=rack_reading,
        finish=lambda values: (round(sum(values) / len(values), 6), max(values), len(values)),
        delay=timedelta(minutes=10),
        window=timedelta(minutes=10),
        slide=timedelta(minutes=5),
        rules=RuleBook.of("rack_temperatures"),
    )


def steps_reading(line: str) -> Reading | None:
    found = record(line)
    if found is None or found.get("device_id") is None or not is_long(found.get("num_steps")):
        return None
    whole = [found.get(f) for f in ("id", "user_id", "device_id")]
    fractional = [found.get(f) for f in ("miles_walked", "calories_burnt")]
    if not all(v is None or is_long(v) for v in whole) or not all(v is None or is_double(v) for v in fractional):
        return None
    if not isinstance(found.get("timestamp"), str):
        return None
    try:
        moment = datetime.strptime(found["timestamp"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    if moment > datetime.now(UTC) + MAX_FUTURE:
        return None
    return Reading(moment, (), (found["num_steps"], *fractional))


def _sum(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present), 6) if present else None


def DeviceStepsModel() -> WindowModel:
    """Steps, miles and calories summed over all devices, 5-minute tumbling windows."""
    return WindowModel(
        read=steps_reading,
        finish=lambda values: (
            sum(v[0] for v in values),
            _sum([v[1] for v in values]),
            _sum([v[2] for v in values]),
            len(values),
        ),
        delay=timedelta(minutes=10),
        window=timedelta(minutes=5),
        rules=RuleBook.of("device_steps"),
    )


# github_activity's declared schema, as the Python types a JSON value must have: objects as
# dicts, arrays as one-element lists, at any depth (null fits anything).
GITHUB_SCHEMA = {
    "id": str,
    "type": str,
    "actor": {"id": int, "login": str},
    "repo": {"id": int, "name": str},
    "payload": {"size": int, "commits": [{"sha": str, "message": str}]},
    "created_at": str,
}


def fits(value: Any, shape: Any) -> bool:
    """Whether a JSON value has the declared shape: every declared field (at any depth) of
    its own JSON type, whole numbers in a long's range; other keys do not matter."""
    if value is None:
        return True
    if isinstance(shape, dict):
        return isinstance(value, dict) and all(fits(value.get(name), inner) for name, inner in shape.items())
    if isinstance(shape, list):
        return isinstance(value, list) and all(fits(item, shape[0]) for item in value)
    if shape is int:
        return is_long(value)
    return isinstance(value, shape) and not isinstance(value, bool)


def github_reading(line: str) -> Reading | None:
    """A usable activity event: every declared field of its type, an id, a type and a
    repo.name, and a time; keyed by (type, repo name), with its payload.size."""
    found = record(line)
    if found is None or not fits(found, GITHUB_SCHEMA):
        return None
    repo, payload = found.get("repo") or {}, found.get("payload") or {}
    if found.get("id") is None or found.get("type") is None or repo.get("name") is None:
        return None
    moment = iso_time(found.get("created_at"))
    return Reading(moment, (found["type"], repo["name"]), payload.get("size")) if moment else None


def GithubActivityModel() -> WindowModel:
    """Events and the sum of payload.size per (type, repo.name), 1-minute windows, watermark
    5 minutes, each id counted once."""
    return WindowModel(
        read=github_reading,
        finish=lambda sizes: (
            len(sizes),
            sum(s for s in sizes if s is not None) if any(s is not None for s in sizes) else None,
        ),
        delay=timedelta(minutes=5),
        window=timedelta(minutes=1),
        identity=lambda line: json.loads(line)["id"],
        rules=RuleBook.of("github_activity"),
    )


@dataclass
class EventsModel:
    """A stateless pipeline: each usable record is one output row; nothing is late or held.

    `to_row` turns a line into its output row, or None when it must be quarantined.
    """

    to_row: Callable[[str], tuple | None]
    rules: RuleBook | None = None
    table: list[tuple] = field(default_factory=list)
    state_rows: int = 0

    def run(self, batches: list[list[str]]) -> BatchResult:
        result = BatchResult()
        for lines in batches:
            for _, row in usable(lines, self.to_row, result, self.rules):
                result.used_rows += 1
                result.emitted[(EPOCH, (len(self.table),))] = row
                self.table.append(row)
        return result

    def rows(self) -> list[tuple]:
        return sorted(self.table, key=repr)


def enriched_row(line: str, users: dict[str, tuple[str, str]], unmatched: str = "quarantine") -> tuple | None:
    """(event_time, event_id, user_id, event, eventtimestamp, country, plan); None when the
    record is unusable, or its user is not in `users` and unmatched events are quarantined."""
    reading = clickstream_reading(line)
    if reading is None or (reading.key[0] not in users and unmatched == "quarantine"):
        return None
    found = record(line)
    fields = tuple(found.get(f) for f in ("event_id", "user_id", "event", "eventtimestamp"))
    return (reading.moment, *fields, *users.get(reading.key[0], (None, None)))


def inferred_fields(lines: list[str]) -> list[str]:
    """What JSON schema inference finds: every key of every object, in name order."""
    return sorted({key for line in lines if (found := record(line)) for key in found})


def _as_string(value: Any) -> str | None:
    """A JSON value read as a string: strings as they are, anything else as compact JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def inferred_row(line: str, fields: list[str], new_fields: str) -> tuple | None:
    """(event_time, *fields, [rescued new fields as a dict]) for a usable record."""
    reading = clickstream_reading(line)
    if reading is None:
        return None
    found = record(line)
    row = (reading.moment, *(found.get(f) for f in fields))
    if new_fields != "rescue":
        return row
    rescued = {k: _as_string(v) for k, v in found.items() if k not in fields}
    return (*row, rescued or None)


@dataclass
class RackAlertsModel:
    """Status changes per rack: WARNING after 3 consecutive readings >= 100, NORMAL at
    the next one under 100; each batch's readings taken in event-time order per rack."""

    threshold: float = 100.0
    needed: int = 3
    rules: RuleBook = field(default_factory=lambda: RuleBook.of("rack_alerts"))
    status: dict[str, tuple[str, int]] = field(default_factory=dict)
    table: list[tuple] = field(default_factory=list)

    @property
    def state_rows(self) -> int:
        return len(self.status)

    def run(self, batches: list[list[str]]) -> BatchResult:
        result = BatchResult()
        for lines in batches:
            read = lambda line: within_pandas(rack_reading(line))  # noqa: E731
            readings = [reading for _, reading in usable(lines, read, result, self.rules)]
            result.used_rows += len(readings)
            for reading in sorted(readings, key=lambda r: r.moment):
                rack = reading.key[0]
                status, high = self.status.get(rack, ("NORMAL", 0))
                high = high + 1 if reading.value >= self.threshold else 0
                change = None
                if status == "NORMAL" and high >= self.needed:
                    status = change = "WARNING"
                elif status == "WARNING" and high == 0:
                    status = change = "NORMAL"
                if change:
                    row = (rack, change, reading.moment, reading.value, high)
                    result.emitted[(reading.moment, (rack,))] = row
                    self.table.append(row)
                self.status[rack] = (status, high)
        return result

    def rows(self) -> list[tuple]:
        return sorted(self.table)


def transaction_reading(line: str) -> Reading | None:
    return within_pandas(keyed_number(line, "userId", "amount", "transactionTime"))


@dataclass
class SpendingSessionsModel(AvailableNowRuns):
    """Sessions of a user's transactions no more than `gap` apart, with an event-time
    timeout: a session is written once the watermark passes its end by more than the gap.
    A transaction at or before the previous batch's watermark is late (dropped)."""

    gap: timedelta = timedelta(hours=1)
    delay: timedelta = timedelta(minutes=10)
    rules: RuleBook = field(default_factory=lambda: RuleBook.of("spending_sessions"))
    previous_ran_with: datetime = EPOCH
    next_watermark: datetime = EPOCH
    newest: datetime = EPOCH
    pending: dict[str, list[tuple[datetime, float]]] = field(default_factory=dict)
    table: list[tuple] = field(default_factory=list)

    @property
    def state_rows(self) -> int:
        return len(self.pending)

    def _sessions(self, transactions: list[tuple[datetime, float]]) -> list[list[tuple[datetime, float]]]:
        sessions: list[list[tuple[datetime, float]]] = []
        for transaction in sorted(transactions):
            if sessions and transaction[0] - sessions[-1][-1][0] <= self.gap:
                sessions[-1].append(transaction)
            else:
                sessions.append([transaction])
        return sessions

    def _batch(self, lines: list[str], result: BatchResult) -> None:
        ran_with = self.next_watermark
        for _, reading in usable(lines, transaction_reading, result, self.rules):
            self.newest = max(self.newest, reading.moment)
            if reading.moment <= self.previous_ran_with:
                result.late_rows_dropped += 1
                continue
            result.used_rows += 1
            self.pending.setdefault(reading.key[0], []).append((reading.moment, reading.value))
        for user in sorted(self.pending):
            still_open = []
            for session in self._sessions(self.pending[user]):
                if session[-1][0] + self.gap < ran_with:
                    total = round(sum(amount for _, amount in session), 6)
                    row = (user, session[0][0], session[-1][0], total, len(session))
                    result.emitted[(session[0][0], (user,))] = row
                    self.table.append(row)
                else:
                    still_open += session
            if still_open:
                self.pending[user] = still_open
            else:
                del self.pending[user]
        self.previous_ran_with = ran_with
        self.next_watermark = max(ran_with, self.newest - self.delay)

    def rows(self) -> list[tuple]:
        return sorted(self.table)


@dataclass
class AdJoinModel(AvailableNowRuns):
    """Clicks joined to impressions of the same ad at most `within` earlier.

    Both sides: a row at or before the previous batch's watermark is late (dropped); the
    watermark is the minimum over the sides that have seen data of (newest event time -
    delay). Every pair of non-late rows that matches is written, whenever its second row
    arrives. With `outer`, an impression that never matched is written with nulls once
    the watermark of a batch passes its time by `within` (no click can match it after).
    """

    outer: bool = False
    rules: RuleBook = field(default_factory=lambda: RuleBook.of("ad_clicks"))  # ad_impressions has the same
    within: timedelta = timedelta(hours=1)
    delay: timedelta = timedelta(minutes=10)
    previous_ran_with: datetime = EPOCH
    next_watermark: datetime = EPOCH
    newest: dict[str, datetime] = field(default_factory=dict)
    impressions: list[list] = field(default_factory=list)  # [impression_id, ad_id, time, matched]
    clicks: list[tuple] = field(default_factory=list)  # (click_id, ad_id, time)
    table: list[tuple] = field(default_factory=list)
    state_rows: None = None  # Spark's join state counts are not modelled

    @staticmethod
    def _read(line: str) -> tuple[str, tuple] | None:
        found = record(line)
        side = "clicks" if '"click_id"' in line else "impressions"
        if found is None or not found.get("ad_id"):
            return None
        ident, time_field = ("click_id", "click_time") if side == "clicks" else ("impression_id", "impression_time")
        if any(not isinstance(found.get(f), str | None) for f in ("ad_id", ident, time_field)):
            return None  # every field of both sides is declared a string
        moment = iso_time(found.get(time_field))
        if not found.get(ident) or moment is None:
            return None
        return side, (found[ident], found["ad_id"], moment)

    def _batch(self, lines: list[str], result: BatchResult) -> None:
        ran_with = self.next_watermark
        new = {"impressions": [], "clicks": []}
        for _, (side, row) in usable(lines, self._read, result, self.rules):
            self.newest[side] = max(self.newest.get(side, EPOCH), row[2])
            if row[2] <= self.previous_ran_with:
                result.late_rows_dropped += 1
                continue
            result.used_rows += 1
            new[side].append(row)
        new_impressions = [[*row, False] for row in new["impressions"]]
        self.impressions += new_impressions
        for impression in self.impressions:
            for click in self.clicks + new["clicks"]:
                fresh = impression in new_impressions or click in new["clicks"]
                if fresh and click[1] == impression[1] and impression[2] <= click[2] <= impression[2] + self.within:
                    self._write(result, (*impression[:3], click[0], click[2]))
                    impression[3] = True
        self.clicks += new["clicks"]
        kept = []
        for impression in self.impressions:
            if impression[2] + self.within <= ran_with:
                if self.outer and not impression[3]:
                    self._write(result, (*impression[:3], None, None))
            else:
                kept.append(impression)
        self.impressions = kept
        self.clicks = [click for click in self.clicks if click[2] > ran_with]
        self.previous_ran_with = ran_with
        watermarks = [moment - self.delay for moment in self.newest.values()]
        self.next_watermark = max(ran_with, min(watermarks)) if watermarks else ran_with

    def _write(self, result: BatchResult, row: tuple) -> None:
        result.emitted[(EPOCH, (len(self.table),))] = row
        self.table.append(row)

    def rows(self) -> list[tuple]:
        return sorted(self.table, key=repr)
