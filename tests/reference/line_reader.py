"""One landed line, read the careful way: what it holds as declared, or the reason it
cannot be used (decode.py reads a batch of lines the quick way first, and hands
this module the lines that way cannot take). Pure Python and msgspec: it runs in Spark's
Python workers.

A value of another type is found at any depth and named by its path
(`payload.commits[0].sha: expected string, got integer`); a decimal with more digits
than its type holds is one too. With `rescue`, each such value is set to null in the
line and kept, as landed, under its path, and the rest is read again.
"""

from __future__ import annotations

import decimal
import re
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec

from jobs import schema
from jobs.flow.source import RECORD_LIMIT, TOO_LARGE_KEPT
from jobs.schema import Array, Kind, Struct
from tests.reference.depth import nesting_depth

MAX_RESCUES = 100  # values of another type one record may have rescued; past them, it is quarantined

_INT64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_INT32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
# A scalar type -> what msgspec reads a value of it as (a timestamp or a date as its text).
_ACCEPTED: dict[str, Any] = {
    "string": str,
    "long": _INT64,
    "int": _INT32,
    "double": float,
    "boolean": bool,
    "timestamp": str,
    "date": str,
}
_NAMES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_GOT = re.compile(r"got `(\w+)`")
_AT = re.compile(r" - at `\$(.*)`$")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
_EXACT = decimal.Context(prec=1000)  # enough digits to tell whether any decimal of a line fits


def accepts(kind: Kind, structs: dict[Kind, Any]) -> Any:
    """What msgspec reads a value of this type as (null is taken at every level)."""
    if isinstance(kind, Struct):
        if kind not in structs:
            names = {f"f{i}": name for i, (name, _) in enumerate(kind.fields)}
            fields = [(f"f{i}", accepts(k, structs) | None, None) for i, (_, k) in enumerate(kind.fields)]
            structs[kind] = msgspec.defstruct(f"Object{len(structs)}", fields, rename=names, gc=False)
        return structs[kind]
    if isinstance(kind, Array):
        return list[accepts(kind.element, structs) | None]
    if schema.decimal_digits(kind):
        return decimal.Decimal
    return _ACCEPTED[kind]


def _misfit(value: Any, kind: Kind, steps: list) -> tuple[list, str] | None:
    """The first decimal of a decoded value that its type cannot hold exactly: (its steps, why)."""
    if value is None:
        return None
    if isinstance(kind, Struct):
        for i, (name, inner) in enumerate(kind.fields):
            found = _misfit(getattr(value, f"f{i}"), inner, [*steps, name])
            if found:
                return found
    elif isinstance(kind, Array):
        for index, item in enumerate(value):
            found = _misfit(item, kind.element, [*steps, index])
            if found:
                return found
    elif schema.decimal_digits(kind) and not _holds(value, *schema.decimal_digits(kind)):
        return steps, f"got {value}, more digits than it holds"
    return None


def _holds(value: decimal.Decimal, precision: int, scale: int) -> bool:
    """Whether decimal(precision, scale) holds the value exactly."""
    if not value.is_finite():
        return False
    if value.is_zero():
        return True
    exact = value.normalize(_EXACT)
    after = max(0, -exact.as_tuple().exponent)
    before = max(0, exact.adjusted() + 1)
    return after <= scale and before <= precision - scale


def _path(steps: list) -> str:
    """['payload', 'commits', 0, 'sha'] -> 'payload.commits[0].sha'"""
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in steps).removeprefix(".")


def as_text(raw: msgspec.Raw) -> str | None:
    """A JSON value as text: a string as it is, anything else as compact JSON (as landed,
    when msgspec cannot read it back: a number beyond a double's range)."""
    try:
        value = msgspec.json.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return bytes(raw).decode("utf-8", "replace").strip()
    return value if value is None or isinstance(value, str) else msgspec.json.encode(value).decode()


@dataclass(slots=True)
class Line:
    reason: str | None = None
    detail: str | None = None
    record: Any = None
    new_keys: list[str] | None = None
    rescued: str | None = None  # a JSON object: new keys and rescued paths -> their values as landed


@dataclass(slots=True)
class LineReader:
    typed: msgspec.json.Decoder
    kinds: dict[str, Kind]
    new_fields: bool
    rescue: bool
    max_depth: int
    exact: bool = field(init=False)  # some field holds a decimal, which msgspec reads whatever its digits

    def __post_init__(self) -> None:
        self.exact = any(schema.contains(kind, schema.decimal_digits) for kind in self.kinds.values())

    def read(self, raw: bytes) -> Line | None:
        """One landed line; None for a blank one. Never raises: what no reason below
        foresaw is `unreadable`, with the exception."""
        try:
            return self._read(raw)
        except Exception as error:  # noqa: BLE001 - one line must never fail the batch
            return Line("unreadable", f"{type(error).__name__}: {str(error)[:500]}")

    def misfit(self, record: Any) -> tuple[list, str] | None:
        """The first decimal of a record its type cannot hold: (its steps, why)."""
        for name, kind in self.kinds.items():
            found = _misfit(getattr(record, name), kind, [name])
            if found:
                return found
        return None

    def _read(self, raw: bytes) -> Line | None:
        if len(raw) > RECORD_LIMIT:
            detail = f"{len(raw):,} bytes; the limit is {RECORD_LIMIT:,}; its first {TOO_LARGE_KEPT:,} are kept"
            return Line("record_too_large", detail)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return Line("invalid_encoding", f"not UTF-8 at byte {error.start}; the line is kept in base64")
        body = text.removeprefix("\ufeff")
        if not body.strip():
            return None
        depth = nesting_depth(raw) if raw.count(b"{") + raw.count(b"[") > self.max_depth else 0
        if depth > self.max_depth:
            return Line("too_deeply_nested", f"{depth:,} levels of objects and arrays; the limit is {self.max_depth}")
        line, rescued = self._typed(body)
        if self.new_fields and line.reason is None:
            found = msgspec.json.decode(body, type=dict[str, msgspec.Raw])
            new = {k: as_text(v) for k, v in found.items() if k not in self.kinds}
            line.new_keys, rescued = list(new), new | rescued
        line.rescued = msgspec.json.encode(rescued).decode() if rescued else None
        return line

    def _typed(self, body: str) -> tuple[Line, dict[str, str | None]]:
        """A line read as declared; with `rescue`, each value of another type is set to null
        and kept under its path, until the rest reads (at most MAX_RESCUES)."""
        rescued: dict[str, str | None] = {}
        while True:
            try:
                record = self.typed.decode(body)
            except msgspec.ValidationError as error:
                malformed = None if rescued else _malformed(body)  # its syntax first
                if malformed is not None:
                    return Line("malformed_json", malformed), {}
                if " - at `$" not in str(error):  # the line itself
                    return Line("not_a_json_object", _not_an_object(str(error))), {}
                steps, got = self._mismatch(str(error))
            except msgspec.DecodeError as error:
                return Line("malformed_json", str(error)), {}
            else:
                found = self.misfit(record) if self.exact else None
                if found is None:
                    return Line(record=record), rescued
                steps, got = found
            detail = f"{_path(steps)}: expected {self._declared(steps)}, {got}"
            nulled = _nulled(body, steps) if self.rescue and len(rescued) < MAX_RESCUES else None
            if nulled is None:
                return Line("wrong_field_type", detail), {}
            body, rescued[_path(steps)] = nulled

    def _mismatch(self, message: str) -> tuple[list, str]:
        """msgspec's message of a value of another type -> (the steps to it, what it got)."""
        at = _AT.search(message)
        steps = [name or int(index) for name, index in _STEP.findall(at.group(1))] if at else []
        got = _GOT.search(message)
        if got:
            return steps, f"got {_NAMES.get(got.group(1), got.group(1))}"
        if "out of range" in message or "<=" in message or ">=" in message:
            return steps, "got a number out of its range"
        return steps, f"got what it cannot read ({message.split(' - at ')[0]})"

    def _declared(self, steps: list) -> str:
        kind: Kind | None = self.kinds.get(steps[0]) if steps else None
        for step in steps[1:]:
            if isinstance(kind, Array) and isinstance(step, int):
                kind = kind.element
            elif isinstance(kind, Struct) and isinstance(step, str):
                kind = kind.field(step)
        return schema.spelled(kind) if kind is not None else "?"


def _malformed(body: str) -> str | None:
    """Why a line is not JSON; None when it is (a number beyond a double's range included)."""
    try:
        msgspec.json.decode(body)
    except msgspec.ValidationError:  # (a DecodeError too) valid JSON msgspec will not hold
        return None
    except msgspec.DecodeError as error:
        return str(error)
    return None


def _not_an_object(message: str) -> str:
    got = _GOT.search(message)
    found = got.group(1) if got else "value"
    return f"a JSON {_NAMES.get(found, found)}"


def _nulled(body: str | bytes, steps: list) -> tuple[str | bytes, str | None] | None:
    """The JSON text with the value at `steps` set to null, and that value as landed (as
    `as_text` gives it); None when there is no value there."""
    if not steps:
        return b"null", as_text(msgspec.Raw(body if isinstance(body, bytes) else body.encode()))
    step, rest = steps[0], steps[1:]
    try:
        container = msgspec.json.decode(
            body, type=list[msgspec.Raw] if isinstance(step, int) else dict[str, msgspec.Raw]
        )
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if (step >= len(container)) if isinstance(step, int) else (step not in container):
        return None
    inner = _nulled(bytes(container[step]), rest)
    if inner is None:
        return None
    container[step] = msgspec.Raw(inner[0])
    return msgspec.json.encode(container), inner[1]
