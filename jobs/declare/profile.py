"""What landed events look like, from a sample: each field's JSON types, how often it is there
and null, and (outside arrays) its values' range, how many distinct, and whether they read as
times. Pure Python, no Spark: `python -m jobs profile` proposes a declaration and a suite from
it (propose.py).

The sample is read as a run lists a landing (jobs/lake/listings.py: regular files only, never
a link), up to `max_files` files spread over the listing's order and `max_lines` lines in all;
a gzip file ('.gz') is read decompressed.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from jobs.lake import fs
from jobs.lake.listings import listing

READ_BYTES = 64 * 2**20  # of one file, at most: a sample, not a run
DISTINCT_CAP = 50_000  # distinct values kept per field; past it, only that there are more
_ISO = re.compile(r"\A\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?\Z")
_EPOCH = {"epoch_seconds": (1e9, 5e9), "epoch_millis": (1e12, 5e12)}  # 2001 to 2128


@dataclass
class Field:
    """One field (or an array's elements) over the sampled events."""

    present: int = 0  # objects holding it
    nulls: int = 0
    types: Counter[str] = field(default_factory=Counter)  # JSON kind -> values: string, long, double, ...
    children: dict[str, Field] = field(default_factory=dict)  # an object's fields, first seen first
    element: Field | None = None  # an array's elements
    distinct: set[Any] | None = field(default_factory=set)  # None: more than DISTINCT_CAP
    low: float | None = None
    high: float | None = None
    times: Counter[str] = field(default_factory=Counter)  # format -> values that read as a time in it

    def observe(self, value: Any, in_array: bool = False) -> None:
        self.present += 1
        if value is None:
            self.nulls += 1
            return
        kind = _kind(value)
        self.types[kind] += 1
        if kind == "object":
            for name, inner in value.items():
                child = self.children.get(name)
                if child is None:  # not setdefault: a Field made per value costs more than reading it
                    child = self.children[name] = Field()
                child.observe(inner, in_array)
        elif kind == "array":
            self.element = self.element or Field()
            for inner in value:
                self.element.observe(inner, in_array=True)
        elif not in_array:  # values of scalars outside arrays: what a column of the table holds
            self._value(kind, value)

    def _value(self, kind: str, value: Any) -> None:
        if self.distinct is not None:
            self.distinct.add(value)
            if len(self.distinct) > DISTINCT_CAP:
                self.distinct = None
        if kind in ("long", "double") and math.isfinite(value):
            self.low = value if self.low is None else min(self.low, value)
            self.high = value if self.high is None else max(self.high, value)
            for fmt, (low, high) in _EPOCH.items():
                self.times[fmt] += low <= value < high
        elif kind == "string":
            self.times["iso8601"] += bool(_ISO.match(value))

    @property
    def values(self) -> int:
        return self.present - self.nulls


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


@dataclass
class Sample:
    """What was read: the events (as one object Field), and what was not an event."""

    landing: str
    files: list[str]  # read, in the order read
    files_listed: int
    events: Field = field(default_factory=Field)
    lines: int = 0
    unusable: int = 0  # lines that are not a JSON object (a run quarantines them)
    blank: int = 0

    @property
    def count(self) -> int:
        return self.events.present


def spread(files: list[str], count: int) -> list[str]:
    """`count` of `files`, evenly spread over them (the first and the last among them)."""
    if len(files) <= count:
        return files
    step = (len(files) - 1) / (count - 1) if count > 1 else 0
    return [files[round(i * step)] for i in range(count)]


def read_sample(landing: str, max_files: int, max_lines: int) -> Sample:
    """Up to `max_files` landed files under `landing`, spread over the listing's order, and up
    to `max_lines` lines of them in all."""
    listed = sorted(listing(landing).files)
    sample = Sample(landing, [], len(listed))
    for uri in spread(listed, max_files):
        if sample.lines >= max_lines:
            break
        sample.files.append(uri)
        _read_file(uri, sample, max_lines)
    return sample


def _read_file(uri: str, sample: Sample, max_lines: int) -> None:
    rest, read = b"", 0
    for chunk in fs.read_chunks(uri, READ_BYTES):
        read += len(chunk)
        *lines, rest = (rest + chunk).split(b"\n")
        for line in lines:
            if sample.lines >= max_lines:
                return
            _read_line(line, sample)
    if rest and sample.lines < max_lines and read < READ_BYTES:  # else a line cut short by the limit
        _read_line(rest, sample)


def _read_line(line: bytes, sample: Sample) -> None:
    if not line.strip():
        sample.blank += 1  # a run skips an empty line too
        return
    sample.lines += 1
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        event = None
    if isinstance(event, dict):
        sample.events.observe(event)
    else:
        sample.unusable += 1
