"""Landed lines -> declared fields, read strictly, with the reason a line cannot be used.

Runs in Spark's Python workers: parse.py hands `LineDecoder` Arrow batches of raw lines
(`mapInArrow`). msgspec reads each line once, in C, checking every declared field's JSON
type as it goes; that is several times faster than Spark's `from_json` plus the checks
it needed, and stricter:

    not UTF-8                         invalid_encoding   (parse.py keeps the line in base64)
    over RECORD_LIMIT bytes           record_too_large   (parse.py keeps its first TOO_LARGE_KEPT bytes)
    nested deeper than max_depth      too_deeply_nested
    not JSON, or text after it        malformed_json
    JSON, but not an object           not_a_json_object
    a field of another JSON type      wrong_field_type   ("user_id: JSON int where string is declared")
    or a number outside its type                         ("num_steps: Number out of range (long is declared)")
    a landed file quarantined by hand file_quarantined   (python -m jobs quarantine-file; its lines are not read)
    anything else a line makes fail   unreadable         (the exception's class and message)

No line can fail the batch: every error a line causes is caught at that line. Depth is
checked before any parser recurses (msgspec recurses once per level, and raises
RecursionError near Python's limit; jobs/flow/depth.py).

A UTF-8 byte order mark and a CR before the line end are accepted; blank lines are not
records. A key given twice counts once, with its last value (as JSON parsers do). With
`types: coerce`, a string field takes any JSON value as its text.
"""

from __future__ import annotations

import itertools
import re
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jobs.columns import BLOCK_START, FILE_SIZE, LINE, LINE_NUMBER, SOURCE_FILE
from jobs.flow.depth import maybe_deeper, nesting_depth
from jobs.flow.tally import FileCount, Files, Tally

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
    """Arrow batches of (LINE as bytes, SOURCE_FILE, BLOCK_START, FILE_SIZE, other columns...)
    -> the other columns, the declared fields, LINE (the same bytes), LINE_NUMBER (counted
    from 1 in each part of a file Spark read, blank lines too; jobs/flow/lines.py makes it a
    line number in the file), REASON, DETAIL and, when asked, NEW_FIELDS and NEW_VALUES.
    Blank lines are left out. BLOCK_START and FILE_SIZE may be missing (a file read whole,
    of unknown size). With a tally, the lines read of each file are counted in it."""

    fields: tuple[tuple[str, str], ...]  # (name, Spark type), as declared
    coerce: bool = False  # a string field takes any JSON value, as its text
    new_fields: bool = False  # also hand back the keys no field names (NEW_FIELDS, NEW_VALUES)
    tally: Tally | None = None
    max_depth: int = field(kw_only=True)  # a line nested deeper is quarantined, unread (the source's)
    # Landed files (as jobs/lake/layout.py names them) whose lines are quarantined unread,
    # with the reason given (python -m jobs quarantine-file).
    quarantined_files: tuple[tuple[str, str], ...] = ()

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Raw takes null as well, and cannot be in a union.
        nullable = [(name, a if a is msgspec.Raw else a | None, None) for name, a in self._accepted()]
        record = msgspec.defstruct("Record", nullable, gc=False)
        reader = _Reader(msgspec.json.Decoder(record), dict(self.fields), self.new_fields, self.max_depth)
        read: Files = {}  # per file, the lines read and its size, for the tally
        counted: dict[tuple[str, int], int] = {}  # lines read of each block so far
        for batch in batches:
            try:
                yield self._decoded(batch, reader, _numbers(batch, counted, read), read)
            except Exception as error:  # a bug, not a line: say where, for quarantine-file
                raise ReadFailed(_where(batch, error)) from error
        if self.tally is not None:
            self.tally.add(read)

    def _accepted(self) -> list[tuple[str, Any]]:
        """(field, what msgspec reads it as): its type, or Raw (JSON text handed back as text)."""
        return [
            (name, msgspec.Raw if not is_scalar(kind) or (kind == "string" and self.coerce) else _SCALARS[kind][0])
            for name, kind in self.fields
        ]

    def _decoded(self, batch: pa.RecordBatch, reader: _Reader, numbers: pa.Array, read: Files) -> pa.RecordBatch:
        raws = batch.column(LINE)
        lines: list[bytes] = raws.to_pylist()
        records: list[Any] = [None] * len(lines)
        # Lines the quick way cannot take (not JSON, of another type, blank, a byte order mark,
        # not UTF-8, too large, with new fields to find) are read the careful way, one by one.
        careful: dict[int, _Line | None] = {}
        by_hand = self._quarantined_by_hand(batch)
        if by_hand:  # unread, but for blank lines (not records)
            careful = {row: _by_hand(lines[row], why) for row, why in enumerate(by_hand) if why}
        if self.new_fields or not _fits(raws):
            careful |= {row: reader.read(raw) for row, raw in enumerate(lines) if row not in careful}
        else:
            decode = reader.typed.decode
            deep = maybe_deeper(raws, self.max_depth)
            for row, raw in enumerate(lines):
                if row in careful:
                    continue
                if deep is not None and deep[row]:
                    careful[row] = reader.read(raw)
                    continue
                try:
                    records[row] = decode(raw)
                except Exception:  # noqa: BLE001 - any line msgspec cannot take is read the careful way
                    careful[row] = reader.read(raw)
        reasons: list[str | None] = [None] * len(lines)
        details: list[str | None] = [None] * len(lines)
        new_keys: list[list[str] | None] = [None] * len(lines)
        new_values: list[str | None] = [None] * len(lines)
        for row, line in careful.items():
            if line is not None:
                records[row], reasons[row], details[row] = line.record, line.reason, line.detail
                new_keys[row], new_values[row] = line.new_keys, line.new_values
        blank = [row for row, line in careful.items() if line is None]
        kept = None
        if blank:  # a blank line is not a record
            for row in blank:
                read[batch.column(SOURCE_FILE)[row].as_py()].blank += 1
            gone = set(blank)
            rows = [row for row in range(len(lines)) if row not in gone]
            kept = pa.array(rows, pa.int64())
            records, reasons, details, new_keys, new_values = (
                [values[row] for row in rows] for values in (records, reasons, details, new_keys, new_values)
            )

        def taken(column: pa.Array) -> pa.Array:
            return column if kept is None else column.take(kept)

        others = [n for n in batch.schema.names if n not in (LINE, FILE_SIZE)]
        columns = [taken(batch.column(n)) for n in others]
        for (name, kind), (_, accepted) in zip(self.fields, self._accepted(), strict=True):
            values = [None if r is None else getattr(r, name, None) for r in records]
            if accepted is msgspec.Raw:  # handed back as text
                columns.append(pa.array([None if v is None else _as_text(v) for v in values], pa.string()))
            else:
                columns.append(pa.array(values, _SCALARS[kind][1]))
        columns += [taken(raws), taken(numbers), pa.array(reasons, pa.string()), pa.array(details, pa.string())]
        out = [*others, *(name for name, _ in self.fields), LINE, LINE_NUMBER, REASON, DETAIL]
        if self.new_fields:
            columns += [pa.array(new_keys, pa.list_(pa.string())), pa.array(new_values, pa.string())]
            out += [NEW_FIELDS, NEW_VALUES]
        return pa.RecordBatch.from_arrays(columns, names=out)

    def _quarantined_by_hand(self, batch: pa.RecordBatch) -> list[str | None] | None:
        """Per row, the reason its file was quarantined by hand; None when no file of the batch was."""
        if not self.quarantined_files:
            return None
        from jobs.lake.layout import from_spark

        reasons = dict(self.quarantined_files)
        files = batch.column(SOURCE_FILE)
        by_file = {name: reasons.get(from_spark(name)) for name in pc.unique(files).to_pylist()}
        if not any(by_file.values()):
            return None
        return [by_file[name] for name in files.to_pylist()]


def _by_hand(raw: bytes, reason: str) -> _Line | None:
    return None if not raw.removeprefix(b"\xef\xbb\xbf").strip() else _Line("file_quarantined", reason)


class ReadFailed(RuntimeError):
    """Decoding a batch of lines failed for a reason no line explains (a bug): the message
    names the file and lines, so that `python -m jobs quarantine-file` can get past it."""


def _where(batch: pa.RecordBatch, error: Exception) -> str:
    files = pc.unique(batch.column(SOURCE_FILE)).to_pylist()
    last = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" (at {last.filename.rsplit('/', 1)[-1]}:{last.lineno})" if last else ""
    more = f" (and {len(files) - 1} more)" if len(files) > 1 else ""
    return f"reading {files[0]}{more}: {type(error).__name__}: {error}{at}"


def _fits(raws: pa.Array) -> bool:
    """Every line is UTF-8 and within the size limit (checked for the whole batch at once)."""
    try:
        raws.cast(pa.string())
    except pa.ArrowInvalid:
        return False
    return len(raws) == 0 or pc.max(pc.binary_length(raws)).as_py() <= RECORD_LIMIT


def _numbers(batch: pa.RecordBatch, counted: dict[tuple[str, int], int], read: Files) -> pa.Array:
    """Each line's number in its block, counting on from the lines of the block read before
    (a task reads a block's lines in order); adds the lines of each file to `read`."""
    rows = batch.num_rows
    files = batch.column(SOURCE_FILE)
    names = batch.schema.names
    starts = batch.column(BLOCK_START) if BLOCK_START in names else pa.array(np.zeros(rows, np.int64))
    sizes = batch.column(FILE_SIZE) if FILE_SIZE in names else pa.nulls(rows, pa.int64())
    # Rows of one block come together: a run starts where the file or the block changes.
    changes = pc.or_(pc.not_equal(files[1:], files[:-1]), pc.not_equal(starts[1:], starts[:-1]))
    bounds = [0, *(np.flatnonzero(changes.to_numpy(zero_copy_only=False)) + 1), rows]
    numbers = np.empty(rows, np.int64)
    for first, end in itertools.pairwise(bounds):
        if first == end:
            continue
        file, start, size = files[first].as_py(), starts[first].as_py(), sizes[first].as_py()
        before = counted.get((file, start), 0)
        numbers[first:end] = np.arange(before + 1, before + 1 + end - first)
        counted[file, start] = before + end - first
        count = read.setdefault(file, FileCount(size_bytes=size))
        count.lines += end - first
    return pa.array(numbers)


def _as_text(raw: msgspec.Raw) -> str | None:
    """A JSON value as text: a string as it is, anything else as compact JSON (as landed,
    when msgspec cannot read it back: a number beyond a double's range)."""
    try:
        value = msgspec.json.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return bytes(raw).decode("utf-8", "replace").strip()
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
    max_depth: int

    def read(self, raw: bytes) -> _Line | None:
        """One landed line; None for a blank one. Never raises: what no reason below
        foresaw is `unreadable`, with the exception."""
        try:
            return self._read(raw)
        except Exception as error:  # noqa: BLE001 - one line must never fail the batch
            return _Line("unreadable", f"{type(error).__name__}: {str(error)[:500]}")

    def _read(self, raw: bytes) -> _Line | None:
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
        depth = nesting_depth(raw) if raw.count(b"{") + raw.count(b"[") > self.max_depth else 0
        if depth > self.max_depth:
            return _Line("too_deeply_nested", f"{depth:,} levels of objects and arrays; the limit is {self.max_depth}")
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
        except (
            msgspec.ValidationError
        ):  # (a DecodeError too) valid JSON msgspec will not hold: a number beyond a double
            pass
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
