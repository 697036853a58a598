"""Landed lines -> declared fields, read strictly, with the reason a line cannot be used:
the reference decoder. A query reads lines with the JVM's decoder (the product's jar,
jobs/flow/functions.py), which tests hold to this one line by line: the same verdict, reason
and values (tests/integration/test_jvm_decoder.py). `LineDecoder` takes Arrow batches of raw
lines, as `mapInArrow` would hand them; msgspec reads each line once, checking every declared
field's JSON type as it goes:

    not UTF-8                         invalid_encoding   (parse.py keeps the line in base64)
    over RECORD_LIMIT bytes           record_too_large   (parse.py keeps its first TOO_LARGE_KEPT bytes)
    nested deeper than max_depth      too_deeply_nested
    not JSON, or text after it        malformed_json
    JSON, but not an object           not_a_json_object
    a field of another JSON type,     wrong_field_type   ("repo.id: expected long, got string")
    at any depth, or a number its                        ("num_steps: expected long, got a number out of its range")
    type cannot hold                                     ("payload.commits[2].sha: expected string, got integer")
    a landed file quarantined by hand file_quarantined   (python -m jobs quarantine-file; its lines are not read)
    anything else a line makes fail   unreadable         (the exception's class and message)

No line can fail the batch: every error a line causes is caught at that line. Depth is
checked before any parser recurses (msgspec recurses once per level, and raises
RecursionError near Python's limit; depth.py).

A UTF-8 byte order mark and a CR before the line end are accepted; blank lines are not
records. A key given twice counts once, with its last value (as JSON parsers do). Keys no
declared field names are ignored, at any depth. With `types: coerce`, a top-level string
field takes any JSON value as its text. With `rescue`, a value of another type does not
refuse its line: it is set to null and kept, as landed, in RESCUED under its path.

Objects and arrays are read into Arrow structs and lists of the declared types (a decimal
exactly, refused when it has more digits than its type holds); a timestamp or a date is
handed back as text, for parse.py to convert.
"""

from __future__ import annotations

import decimal
import itertools
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jobs import schema
from jobs.columns import BLOCK_START, DETAIL, FILE_SIZE, LINE, LINE_NUMBER, NEW_FIELDS, REASON, RESCUED, SOURCE_FILE
from jobs.flow.source import RECORD_LIMIT
from jobs.flow.tally import FileCount, Files, Tally
from jobs.schema import Array, Kind, Struct
from tests.reference.depth import maybe_deeper
from tests.reference.line_reader import Line, LineReader, accepts, as_text

# A scalar type -> the Arrow type it is handed back as (a timestamp or a date as text, for
# Spark to convert).
_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "int": pa.int32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "timestamp": pa.string(),
    "date": pa.string(),
}


def spark_type(kind: str) -> str:
    """The Spark type a field of this type is handed back as (a timestamp or a date as text)."""
    return schema.spelled(_handed_back(schema.kind_of(kind)))


def _handed_back(kind: Kind) -> Kind:
    if isinstance(kind, Struct):
        return Struct(tuple((name, _handed_back(field)) for name, field in kind.fields))
    if isinstance(kind, Array):
        return Array(_handed_back(kind.element))
    return "string" if kind in ("timestamp", "date") else kind


def _arrow_type(kind: Kind) -> pa.DataType:
    if isinstance(kind, Struct):
        return pa.struct([(name, _arrow_type(field)) for name, field in kind.fields])
    if isinstance(kind, Array):
        return pa.list_(_arrow_type(kind.element))
    digits = schema.decimal_digits(kind)
    return pa.decimal128(*digits) if digits else _ARROW[kind]


@dataclass(frozen=True)
class LineDecoder:
    """Arrow batches of (LINE as bytes, SOURCE_FILE, BLOCK_START, FILE_SIZE, other columns...)
    -> the other columns, the declared fields, LINE (the same bytes), LINE_NUMBER (counted
    from 1 in each part of a file Spark read, blank lines too; jobs/accounting/lines.py makes it a
    line number in the file), REASON, DETAIL and, when asked, NEW_FIELDS and RESCUED.
    Blank lines are left out. BLOCK_START and FILE_SIZE may be missing (a file read whole,
    of unknown size). With a tally, the lines read of each file are counted in it."""

    fields: tuple[tuple[str, str], ...]  # (name, type as jobs/schema.py spells it), as declared
    coerce: bool = False  # a top-level string field takes any JSON value, as its text
    new_fields: bool = False  # also hand back the keys no field names (NEW_FIELDS, RESCUED)
    rescue: bool = False  # a value of another type is rescued (RESCUED), not its line quarantined
    tally: Tally | None = None
    max_depth: int = field(kw_only=True)  # a line nested deeper is quarantined, unread (the source's)
    # Landed files (as jobs/lake/layout.py names them) whose lines are quarantined unread,
    # with the reason given (python -m jobs quarantine-file).
    quarantined_files: tuple[tuple[str, str], ...] = ()

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        kinds = {name: schema.kind_of(kind) for name, kind in self.fields}
        # Raw takes null as well, and cannot be in a union.
        accepted = self._accepted(kinds)
        nullable = [(name, a if a is msgspec.Raw else a | None, None) for name, a in accepted]
        record = msgspec.defstruct("Record", nullable, gc=False)
        text_fields = frozenset(name for name, a in accepted if a is msgspec.Raw)  # handed back as JSON text
        reader = LineReader(msgspec.json.Decoder(record), kinds, self.new_fields, self.rescue, self.max_depth)
        read: Files = {}  # per file, the lines read and its size, for the tally
        counted: dict[tuple[str, int], int] = {}  # lines read of each block so far
        for batch in batches:
            try:
                yield self._decoded(batch, reader, text_fields, _numbers(batch, counted, read), read)
            except Exception as error:  # a bug, not a line: say where, for quarantine-file
                raise ReadFailed(_where(batch, error)) from error
        if self.tally is not None:
            self.tally.add(read)

    def _accepted(self, kinds: dict[str, Kind]) -> list[tuple[str, Any]]:
        """(field, what msgspec reads it as): its type, or Raw (any JSON value, handed back as
        text): a top-level timestamp or date (for Spark to read), a coerced string."""
        structs: dict[Kind, Any] = {}
        return [
            (
                name,
                msgspec.Raw
                if kind in ("timestamp", "date") or (kind == "string" and self.coerce)
                else accepts(kind, structs),
            )
            for name, kind in kinds.items()
        ]

    @property
    def rescues(self) -> bool:
        return self.new_fields or self.rescue

    def output_columns(self, others: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """(name, Spark type) of each column the decoder hands back, in order: the input's
        `others` (all but LINE and FILE_SIZE), every declared field, LINE, LINE_NUMBER,
        REASON, DETAIL and, when asked, NEW_FIELDS and RESCUED."""
        out = [*others, *((name, spark_type(kind)) for name, kind in self.fields)]
        out += [(LINE, "binary"), (LINE_NUMBER, "bigint"), (REASON, "string"), (DETAIL, "string")]
        if self.new_fields:
            out.append((NEW_FIELDS, "array<string>"))
        if self.rescues:
            out.append((RESCUED, "string"))
        return out

    def _decoded(
        self, batch: pa.RecordBatch, reader: LineReader, text_fields: frozenset[str], numbers: pa.Array, read: Files
    ) -> pa.RecordBatch:
        raws = batch.column(LINE)
        lines: list[bytes] = raws.to_pylist()
        records: list[Any] = [None] * len(lines)
        # Lines the quick way cannot take (not JSON, of another type, blank, a byte order mark,
        # not UTF-8, too large, with new fields to find) are read the careful way, one by one.
        careful: dict[int, Line | None] = {}
        by_hand = self._quarantined_by_hand(batch)
        if by_hand:  # unread, but for blank lines (not records)
            careful = {row: _by_hand(lines[row], why) for row, why in enumerate(by_hand) if why}
        if self.new_fields or not _fits(raws):
            careful |= {row: reader.read(raw) for row, raw in enumerate(lines) if row not in careful}
        else:
            decode, misfit = reader.typed.decode, reader.misfit if reader.exact else None
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
                    continue
                if misfit is not None and misfit(records[row]):
                    careful[row] = reader.read(raw)
        reasons: list[str | None] = [None] * len(lines)
        details: list[str | None] = [None] * len(lines)
        new_keys: list[list[str] | None] = [None] * len(lines)
        rescued: list[str | None] = [None] * len(lines)
        for row, line in careful.items():
            if line is not None:
                records[row], reasons[row], details[row] = line.record, line.reason, line.detail
                new_keys[row], rescued[row] = line.new_keys, line.rescued
        blank = [row for row, line in careful.items() if line is None]
        kept = None
        if blank:  # a blank line is not a record
            for row in blank:
                read[batch.column(SOURCE_FILE)[row].as_py()].blank += 1
            gone = set(blank)
            rows = [row for row in range(len(lines)) if row not in gone]
            kept = pa.array(rows, pa.int64())
            records, reasons, details, new_keys, rescued = (
                [values[row] for row in rows] for values in (records, reasons, details, new_keys, rescued)
            )

        def taken(column: pa.Array) -> pa.Array:
            return column if kept is None else column.take(kept)

        others = [n for n in batch.schema.names if n not in (LINE, FILE_SIZE)]
        columns = [taken(batch.column(n)) for n in others]
        for name, kind in reader.kinds.items():
            values = [None if r is None else getattr(r, name, None) for r in records]
            if name in text_fields:
                columns.append(pa.array([None if v is None else as_text(v) for v in values], pa.string()))
            elif isinstance(kind, Struct | Array):  # objects and lists of values, by field name
                columns.append(
                    pa.array(msgspec.to_builtins(values, builtin_types=(decimal.Decimal,)), _arrow_type(kind))
                )
            else:
                columns.append(pa.array(values, _arrow_type(kind)))
        columns += [taken(raws), taken(numbers), pa.array(reasons, pa.string()), pa.array(details, pa.string())]
        if self.new_fields:
            columns.append(pa.array(new_keys, pa.list_(pa.string())))
        if self.rescues:
            columns.append(pa.array(rescued, pa.string()))
        names = [name for name, _ in self.output_columns([(n, "") for n in others])]
        return pa.RecordBatch.from_arrays(columns, names=names)

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


def _by_hand(raw: bytes, reason: str) -> Line | None:
    return None if not raw.removeprefix(b"\xef\xbb\xbf").strip() else Line("file_quarantined", reason)


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
