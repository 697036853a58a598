"""Landed lines -> declared fields, read strictly, with the reason a line cannot be used.

Runs in Spark's Python workers: parse.py hands `LineDecoder` Arrow batches of raw lines
(`mapInArrow`). msgspec reads each line once, in C, checking every declared field's JSON
type as it goes; that is several times faster than Spark's `from_json` plus the checks
it needed, and stricter:

    not UTF-8                         invalid_encoding   (parse.py keeps the line in base64)
    over RECORD_LIMIT bytes           record_too_large   (parse.py keeps its first TOO_LARGE_KEPT bytes)
    not JSON, or text after it        malformed_json
    JSON, but not an object           not_a_json_object
    a field of another JSON type      wrong_field_type   ("user_id: JSON int where string is declared")

A UTF-8 byte order mark and a CR before the line end are accepted; blank lines are not
records. A key given twice counts once, with its last value (as JSON parsers do). With
`types: coerce`, a string field takes any JSON value as its text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
import pyarrow as pa

from jobs.columns import BLOCK_START, LINE, LINE_NUMBER, SOURCE_FILE

RECORD_LIMIT = 64 * 2**20  # bytes; README, "Late data and row accounting"
TOO_LARGE_KEPT = 2**20  # bytes of a line over the limit its quarantine record keeps (parse.py)
REASON, DETAIL = "_reason", "_detail"
NEW_FIELDS = "_new_fields"  # keys no declared field names, for new_fields: fail | rescue
NEW_VALUES = "_new_values"  # ... and those keys with their values, as a JSON object

_INT64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_INT32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
# Spark type -> (what msgspec accepts, the Arrow type handed back). Any other type (a date,
# a timestamp, an inferred struct or array) comes back as its JSON text for Spark to convert.
_SCALARS: dict[str, tuple[Any, pa.DataType]] = {
    "string": (str, pa.string()),
    "long": (_INT64, pa.int64()),
    "bigint": (_INT64, pa.int64()),
    "int": (_INT32, pa.int32()),
    "integer": (_INT32, pa.int32()),
    "double": (float, pa.float64()),
    "boolean": (bool, pa.bool_()),
}
_NAMES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_GOT = re.compile(r"got `(\w+)` - at `\$\.(.+)`$")
_AT = re.compile(r" - at `\$\.(.+)`$")


def is_scalar(kind: str) -> bool:
    """Whether a field of this Spark type is decoded here, or handed to Spark as JSON text."""
    return kind in _SCALARS


def spark_type(kind: str) -> str:
    return kind if is_scalar(kind) else "string"


@dataclass(frozen=True)
class LineDecoder:
    """Arrow batches of (LINE as bytes, other columns...) -> the other columns, the declared
    fields, LINE (the same bytes, or null without keep_lines), LINE_NUMBER, REASON, DETAIL
    and, when asked, NEW_FIELDS and NEW_VALUES. Blank lines are left out.

    With `numbered`, the input also has SOURCE_FILE and BLOCK_START (jobs/flow/source.py,
    `read_lines`), and LINE_NUMBER counts the lines of each block (blank ones too) from 1;
    jobs/flow/lines.py makes that a line number in the file. Otherwise it is null."""

    fields: tuple[tuple[str, str], ...]  # (name, Spark type), as declared
    coerce: bool = False  # a string field takes any JSON value, as its text
    new_fields: bool = False  # also hand back the keys no field names (NEW_FIELDS, NEW_VALUES)
    keep_lines: bool = True  # only a quarantine needs the raw line
    numbered: bool = False  # ... and its number

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Raw takes null as well, and cannot be in a union.
        nullable = [(name, a if a is msgspec.Raw else a | None, None) for name, a in self._accepted()]
        record = msgspec.defstruct("Record", nullable)
        reader = _Reader(msgspec.json.Decoder(record), dict(self.fields), self.new_fields)
        counted: dict[tuple[str, int], int] = {}  # lines read of each block, for `numbered`
        for batch in batches:
            yield self._decoded(batch, reader, counted)

    def _blocks(self, batch: pa.RecordBatch) -> list[tuple[str, int]] | None:
        """Each row's (file, block start), when the lines are numbered."""
        if not self.numbered:
            return None
        files, starts = batch.column(SOURCE_FILE).to_pylist(), batch.column(BLOCK_START).to_pylist()
        return list(zip(files, starts, strict=True))

    def _accepted(self) -> list[tuple[str, Any]]:
        """(field, what msgspec reads it as): its type, or Raw (JSON text handed back as text)."""
        return [
            (name, msgspec.Raw if not is_scalar(kind) or (kind == "string" and self.coerce) else _SCALARS[kind][0])
            for name, kind in self.fields
        ]

    def _decoded(self, batch: pa.RecordBatch, reader: _Reader, counted: dict[tuple[str, int], int]) -> pa.RecordBatch:
        names = [name for name, _ in self.fields]
        values: list[list[Any]] = [[] for _ in names]
        reasons, details, new_keys, new_values, kept, numbers = [], [], [], [], [], []
        blocks = self._blocks(batch)
        for row, raw in enumerate(batch.column(LINE).to_pylist()):
            if blocks:
                block = blocks[row]
                number = counted[block] = counted.get(block, 0) + 1
            line = reader.read(raw)
            if line is None:
                continue  # a blank line is not a record
            kept.append(row)
            if blocks:
                numbers.append(number)
            reasons.append(line.reason)
            details.append(line.detail)
            new_keys.append(line.new_keys)
            new_values.append(line.new_values)
            for column, name in zip(values, names, strict=True):
                column.append(None if line.record is None else getattr(line.record, name))
        others = [n for n in batch.schema.names if n != LINE]
        taken = pa.array(kept, pa.int64())
        columns = [batch.column(n).take(taken) for n in others]
        for (_, kind), (_, accepted), column in zip(self.fields, self._accepted(), values, strict=True):
            if accepted is msgspec.Raw:  # handed back as text
                columns.append(pa.array([None if v is None else _as_text(v) for v in column], pa.string()))
            else:
                columns.append(pa.array(column, _SCALARS[kind][1]))
        columns += [batch.column(LINE).take(taken) if self.keep_lines else pa.nulls(len(kept), pa.binary())]
        columns += [pa.array(numbers, pa.int64()) if blocks else pa.nulls(len(kept), pa.int64())]
        columns += [pa.array(reasons, pa.string()), pa.array(details, pa.string())]
        out = [*others, *names, LINE, LINE_NUMBER, REASON, DETAIL]
        if self.new_fields:
            columns += [pa.array(new_keys, pa.list_(pa.string())), pa.array(new_values, pa.string())]
            out += [NEW_FIELDS, NEW_VALUES]
        return pa.RecordBatch.from_arrays(columns, names=out)


def _as_text(raw: msgspec.Raw) -> str | None:
    """A JSON value as text: a string as it is, anything else as compact JSON."""
    value = msgspec.json.decode(raw)
    return value if value is None or isinstance(value, str) else msgspec.json.encode(value).decode()


@dataclass(slots=True)
class _Line:
    reason: str | None = None
    detail: str | None = None
    record: Any = None
    new_keys: list[str] | None = None
    new_values: str | None = None


@dataclass(slots=True)
class _Reader:
    typed: msgspec.json.Decoder
    kinds: dict[str, str]
    new_fields: bool

    def read(self, raw: bytes) -> _Line | None:
        """One landed line; None for a blank one."""
        if len(raw) > RECORD_LIMIT:
            detail = f"{len(raw):,} bytes; the limit is {RECORD_LIMIT:,}; its first {TOO_LARGE_KEPT:,} are kept"
            return _Line("record_too_large", detail)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return _Line("invalid_encoding", f"not UTF-8 at byte {error.start}; the line is kept in base64")
        body = text.removeprefix("\ufeff")
        if not body.strip():
            return None
        try:
            line = _Line(record=self.typed.decode(body))
        except msgspec.ValidationError as error:
            line = _Line(*self._refused(body, str(error)))
        except msgspec.DecodeError as error:
            return _Line("malformed_json", str(error))
        if self.new_fields and line.reason != "not_a_json_object":
            found = msgspec.json.decode(body, type=dict[str, msgspec.Raw])
            new = {k: _as_text(v) for k, v in found.items() if k not in self.kinds}
            line.new_keys, line.new_values = list(new), msgspec.json.encode(new).decode() if new else None
        return line

    def _refused(self, body: str, message: str) -> tuple[str, str]:
        """Why a line that does not fit the declaration is refused: its syntax first."""
        try:
            msgspec.json.decode(body)
        except msgspec.DecodeError as error:
            return "malformed_json", str(error)
        if message.startswith("Expected `object`, got `"):
            found = message.rsplit("`", 2)[-2]
            return "not_a_json_object", f"a JSON {_NAMES.get(found, found)}"
        got = _GOT.search(message)
        if got:
            found, field = got.groups()
            return "wrong_field_type", f"{field}: JSON {_NAMES.get(found, found)} where {self.kinds[field]} is declared"
        at = _AT.search(message)
        field = at.group(1) if at else "?"
        return "wrong_field_type", f"{field}: {message.split(' - at ')[0]} ({self.kinds.get(field, '?')} is declared)"
