"""Field types, as declarations, recorded schemas and Spark spell them.

A field's type is a scalar, an object of named fields, or an array of one type:

    string  long  int  double  boolean  timestamp  date  decimal(p,s)
    Struct(fields=(("id", "long"), ("name", "string")))     {id: long, name: string}
    Array(element=Struct(...))                              [{sha: string}]

`kind_of` reads Spark's own spelling (`struct<id:bigint,name:string>`, `array<string>`,
`decimal(10,2)`; a name in backticks when it is not a plain word) and `spelled` writes it,
so a type travels as text (declaration, ledger, checkpoint contract) and is the same type
wherever it is read. Pure Python: the decoder imports it in Spark's workers.

A path names a field inside objects: `repo.name` is the field `name` of the object `repo`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

SCALARS = ("string", "long", "int", "double", "boolean", "timestamp", "date")
_SPARK_NAMES = {"bigint": "long", "integer": "int", "float": "double", "void": "string"}
_DECIMAL = re.compile(r"\Adecimal\((\d+),\s*(\d+)\)\Z")
_PLAIN = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_PRECISION = 38  # Spark's widest decimal


@dataclass(frozen=True)
class Struct:
    """A JSON object's declared fields, in order."""

    fields: tuple[tuple[str, Kind], ...]

    def field(self, name: str) -> Kind | None:
        return next((kind for field, kind in self.fields if field == name), None)


@dataclass(frozen=True)
class Array:
    element: Kind


Kind = Union[str, Struct, Array]  # noqa: UP007 - a str for a scalar (its spelling)


class TypeSpellingError(ValueError):
    """A type's text is not one this product reads."""


def decimal_digits(kind: Kind) -> tuple[int, int] | None:
    """(precision, scale) of a decimal type; None for any other."""
    match = _DECIMAL.match(kind) if isinstance(kind, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def scalar(name: str) -> str:
    """A scalar's one spelling ('bigint' -> 'long'); refuses what is not one."""
    name = _SPARK_NAMES.get(name.strip().lower(), name.strip().lower())
    digits = decimal_digits(name)
    if digits is not None:
        precision, scale = digits
        if not 1 <= precision <= MAX_PRECISION or scale > precision:
            raise TypeSpellingError(
                f"{name}: a decimal has 1 to {MAX_PRECISION} digits, and at most that many after the point"
            )
        return f"decimal({precision},{scale})"
    if name not in SCALARS:
        raise TypeSpellingError(f"{name!r} is not a type")
    return name


def spelled(kind: Kind) -> str:
    """A type in Spark's DDL spelling (which also reads `long` and `int`), names quoted
    where they need it."""
    if isinstance(kind, Struct):
        return "struct<" + ",".join(f"{quoted(name)}:{spelled(field)}" for name, field in kind.fields) + ">"
    if isinstance(kind, Array):
        return f"array<{spelled(kind.element)}>"
    return kind


def quoted(name: str) -> str:
    return name if _PLAIN.match(name) else "`" + name.replace("`", "``") + "`"


def kind_of(text: str) -> Kind:
    """Spark's spelling of a type -> the type (the inverse of `spelled`)."""
    kind, end = _parse(text, 0)
    if end != len(text):
        raise TypeSpellingError(f"{text!r}: unexpected {text[end:]!r}")
    return kind


def _parse(text: str, at: int) -> tuple[Kind, int]:
    if text.startswith("struct<", at):
        at += len("struct<")
        fields: list[tuple[str, Kind]] = []
        while not text.startswith(">", at):
            name, at = _name(text, at)
            kind, at = _parse(text, at + 1)  # past the ':'
            fields.append((name, kind))
            at += text.startswith(",", at)
        return Struct(tuple(fields)), at + 1
    if text.startswith("array<", at):
        element, at = _parse(text, at + len("array<"))
        if not text.startswith(">", at):
            raise TypeSpellingError(f"{text!r}: an array's type is not closed at {at}")
        return Array(element), at + 1
    end = at
    while end < len(text) and text[end] not in ",>":
        end += 1 + (text.find(")", end) - end if text[end] == "(" else 0)
    return scalar(text[at:end]), end


def _name(text: str, at: int) -> tuple[str, int]:
    """A field name and the position of the ':' after it; a name in backticks may hold anything."""
    if text.startswith("`", at):
        name, at = [], at + 1
        while True:
            close = text.index("`", at)
            name.append(text[at:close])
            if not text.startswith("``", close):
                return "`".join(name), close + 1
            at = close + 2
    colon = text.index(":", at)
    return text[at:colon], colon


def of_spark(data_type: DataType) -> Kind:
    """What Spark inferred -> the type (a field that was only ever null is a string)."""
    from pyspark.sql.types import ArrayType, StructType

    if isinstance(data_type, StructType):
        return Struct(tuple((f.name, of_spark(f.dataType)) for f in data_type.fields))
    if isinstance(data_type, ArrayType):
        return Array(of_spark(data_type.elementType))
    return scalar(data_type.simpleString())


def at_path(fields: dict[str, Kind], path: str) -> Kind | None:
    """The type of the field a path names, through objects; None when there is none."""
    first, *rest = path.split(".")
    kind = fields.get(first)
    for name in rest:
        kind = kind.field(name) if isinstance(kind, Struct) else None
    return kind


def paths(fields: dict[str, Kind]) -> list[str]:
    """Every path the fields have, through objects (`repo`, `repo.id`, `repo.name`), in order."""
    found = []
    for name, kind in fields.items():
        found.append(name)
        if isinstance(kind, Struct):
            found += [f"{name}.{inner}" for inner in paths(dict(kind.fields))]
    return found


def with_type_at(fields: dict[str, Kind], path: str, kind: Kind) -> dict[str, Kind]:
    """`fields` with the field at `path` of type `kind`, added (with the objects that hold
    it) if it is not there."""
    first, *rest = path.split(".")
    if not rest:
        return {**fields, first: kind}
    inner = fields.get(first)
    inner_fields = dict(inner.fields) if isinstance(inner, Struct) else {}
    return {**fields, first: Struct(tuple(with_type_at(inner_fields, ".".join(rest), kind).items()))}


def contains(kind: Kind, test) -> bool:
    """Whether the type or any type inside it passes `test` (a scalar's spelling -> bool)."""
    if isinstance(kind, Struct):
        return any(contains(field, test) for _, field in kind.fields)
    if isinstance(kind, Array):
        return contains(kind.element, test)
    return test(kind)


def outline(kind: Kind) -> str:
    """A type in a few characters: an object as its number of fields, an array in brackets."""
    if isinstance(kind, Struct):
        count = len(kind.fields)
        return f"{{{count} field{'s' if count != 1 else ''}}}"
    if isinstance(kind, Array):
        return f"[{outline(kind.element)}]"
    return kind


TYPE_CHOICES = ", ".join(SCALARS) + ", decimal(p,s), an object {field: type} or a list [type]"


def declared_kind(declared: Any, path: str) -> Kind:
    """A declared field's type: a scalar's name, a mapping (an object), or a list of one
    type (an array); refused with the field's path."""
    if isinstance(declared, str):
        try:
            return scalar(declared)
        except TypeSpellingError:
            raise ValueError(f"field {path!r} has type {declared!r}; use one of {TYPE_CHOICES}") from None
    if isinstance(declared, dict) and declared:
        for name in declared:
            if not isinstance(name, str) or not name or "." in name:
                raise ValueError(f"field {path!r} holds a field named {name!r}; name fields without dots")
        return Struct(tuple((name, declared_kind(kind, f"{path}.{name}")) for name, kind in declared.items()))
    if isinstance(declared, list) and len(declared) == 1:
        return Array(declared_kind(declared[0], f"{path}[]"))
    raise ValueError(f"field {path!r} has type {declared!r}; use one of {TYPE_CHOICES}")


def declared_types(value: Any) -> dict[str, str]:
    """A mapping of field (or path) -> declared type, each type in its one spelling."""
    if not isinstance(value, dict) or not value:
        raise ValueError("must map each field name to a type, or be 'infer'")
    return {str(name): spelled(declared_kind(kind, str(name))) for name, kind in value.items()}
