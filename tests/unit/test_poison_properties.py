"""Property-based tests of the decoder, for every declared source schema: whatever a line
holds, it is either used, with each declared field equal to its JSON value, or
quarantined with a reason; decoding never raises.

The oracle is independent of tests/reference/decode.py: Python's own `json` (strict: no NaN or
Infinity, no control characters), the model's depth count and text check (tests/model.py),
and the JSON types each declared type takes, written out here. Generated inputs: arbitrary bytes; records of the
declared fields with values of every JSON type, the extreme longs and doubles, huge
exponents, NUL and lone surrogates; objects and arrays nested up to 100,000 deep; 1 MiB
strings, 100,000 keys and duplicate keys. `JOBS_HYPOTHESIS_EXAMPLES` raises the number of
examples (CI runs the default).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs import declare
from jobs.columns import BLOCK_START, FILE_SIZE, LINE, RESCUED, SOURCE_FILE
from jobs.declare.load import pipelines_dir
from jobs.declare.parts import MAX_DEPTH
from tests.model import is_double, nesting_depth, text_ok
from tests.reference.decode import DETAIL, REASON, LineDecoder

EXAMPLES = int(os.environ.get("JOBS_HYPOTHESIS_EXAMPLES", "150"))
SCHEMAS = {
    name: dict(p.source.fields) for name, p in declare.load_all().items() for p in [p] if not p.source.infer_schema
}
# A join's second source has a schema of its own.
SCHEMAS |= {
    f"{name}.{p.join.source.name}": dict(p.join.source.fields)
    for name, p in declare.load_all().items()
    if getattr(p, "join", None) is not None
}
# What the oracle reads each schema as: the declarations' own YAML (objects as mappings,
# arrays as one-item lists), not the product's reading of it.
SHAPES = {
    name: (raw["source"] if "." not in name else raw["join"]["source"])["schema"]
    for name in SCHEMAS
    for raw in [yaml.safe_load((pipelines_dir() / f"{name.split('.')[0]}.yaml").read_text())]
}
# Nesting no shipped declaration has: arrays of arrays, objects in arrays in objects.
NESTED = {"id": "long", "tags": [["string"]], "meta": {"ok": "boolean", "points": [{"x": "double", "n": "int"}]}}
SHAPES["nested"] = NESTED
SCHEMAS["nested"] = {
    "id": "long",
    "tags": "array<array<string>>",
    "meta": "struct<ok:boolean,points:array<struct<x:double,n:int>>>",
}
EXTREMES = [
    0,
    -1,
    2**31 - 1,
    -(2**31),
    2**31,
    2**63 - 1,
    -(2**63),
    2**63,
    -(2**63) - 1,
    10**30,
    1.5,
    -0.0,
    1.7976931348623157e308,
    5e-324,
    True,
    False,
    None,
    "",
    "x" * 50,
]
RAW_NUMBERS = ["1e999", "-1e999", "1E400", "1e-400", "123456789012345678901234567890", "1" + "0" * 400, "-0", "0.0"]


# The oracle.
def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    found = dict(pairs)
    found["__duplicates__"] = len(found) < len(pairs)
    return found


def takes(kind: Any, value: Any) -> bool:
    """Whether a declared field of `kind` (a type's name, a mapping or a one-item list) takes
    this JSON value (null: any), at every depth."""
    if value is None:
        return True
    if isinstance(kind, dict):
        return isinstance(value, dict) and all(takes(k, value.get(name)) for name, k in kind.items())
    if isinstance(kind, list):
        return isinstance(value, list) and all(takes(kind[0], item) for item in value)
    if kind == "string":
        return isinstance(value, str)
    if kind in ("long", "int"):
        bits = 63 if kind == "long" else 31
        return isinstance(value, int) and not isinstance(value, bool) and -(2**bits) <= value < 2**bits
    if kind == "double":
        return is_double(value)
    if kind == "boolean":
        return isinstance(value, bool)
    return True  # timestamp, date: handed to Spark as text


def projected(value: Any, kind: Any) -> Any:
    """A JSON value as the decoder hands it back: only the declared fields of objects, a
    double as a float."""
    if value is None:
        return None
    if isinstance(kind, dict):
        return {name: projected(value.get(name), k) for name, k in kind.items()}
    if isinstance(kind, list):
        return [projected(item, kind[0]) for item in value]
    return float(value) if kind == "double" else value


def rescued(value: Any, kind: Any, path: str) -> tuple[Any, dict[str, Any]]:
    """With rescue: (the value with each part its type does not take set to null, those
    parts by path)."""
    if value is None:
        return None, {}
    if isinstance(kind, dict) and isinstance(value, dict):
        out, found = {}, {}
        for name, k in kind.items():
            out[name], more = rescued(value.get(name), k, f"{path}.{name}")
            found |= more
        return out, found
    if isinstance(kind, list) and isinstance(value, list):
        items = [rescued(item, kind[0], f"{path}[{i}]") for i, item in enumerate(value)]
        return [item for item, _ in items], {p: v for _, more in items for p, v in more.items()}
    if isinstance(kind, dict | list) or not takes(kind, value):
        return None, {path: value}
    return projected(value, kind), {}


def expected(line: bytes, schema: dict[str, Any], rescue: bool = False) -> tuple[str, dict | None]:
    """("blank" | "usable" | "quarantined" | "either", the declared values when usable)."""
    try:
        text = line.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return "quarantined", None
    if not text.strip():
        return "blank", None
    if nesting_depth(text) > MAX_DEPTH:
        return "quarantined", None
    try:
        value = json.loads(text, parse_constant=_no_constants, object_pairs_hook=_pairs)
    except (ValueError, RecursionError):
        return "quarantined", None
    if not isinstance(value, dict) or not text_ok(value):
        return "quarantined", None  # a lone surrogate escape: no Unicode text (RFC 8259 8.2), refused as malformed
    # msgspec checks each occurrence of a key given twice; json keeps the last one.
    verdict = "either" if _has_duplicates(value) else "usable"
    if rescue:
        parts = {name: rescued(value.get(name), kind, name) for name, kind in schema.items()}
        found = {path: v for _, more in parts.values() for path, v in more.items()}
        return verdict, {name: part for name, (part, _) in parts.items()} | {"_rescued": found}
    if any(not takes(kind, value.get(name)) for name, kind in schema.items()):
        return "quarantined", None
    return verdict, {name: projected(value.get(name), kind) for name, kind in schema.items()}


def _has_duplicates(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get("__duplicates__", False) or any(_has_duplicates(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_duplicates(v) for v in value)
    return False


# The code under test, as Spark's Python worker runs it.
def decode(lines: list[bytes], schema: dict[str, str], rescue: bool = False) -> list[dict]:
    batch = pa.RecordBatch.from_pydict(
        {
            LINE: pa.array(lines, pa.binary()),
            SOURCE_FILE: ["file:///landing/f.json"] * len(lines),
            BLOCK_START: pa.array([0] * len(lines), pa.int64()),
            FILE_SIZE: pa.array([sum(len(line) + 1 for line in lines)] * len(lines), pa.int64()),
        }
    )
    decoder = LineDecoder(tuple(schema.items()), max_depth=MAX_DEPTH, rescue=rescue)
    return [row for out in decoder(iter([batch])) for row in out.to_pylist()]


def check(lines: list[bytes], name: str, rescue: bool = False) -> None:
    schema, shapes = SCHEMAS[name], SHAPES[name]
    rows = decode(lines, schema, rescue)
    verdicts = [expected(line, shapes, rescue) for line in lines]
    kept = [(line, v) for line, v in zip(lines, verdicts, strict=True) if v[0] != "blank"]
    assert len(rows) == len(kept), "every line but the blank ones is a row"
    for row, (line, (verdict, values)) in zip(rows, kept, strict=True):
        if row[REASON] is not None:
            assert verdict in ("quarantined", "either"), f"{line[:200]!r} quarantined: {row[REASON]}, {row[DETAIL]}"
            assert row[DETAIL], f"{line[:200]!r}: a reason needs a detail"
            continue
        assert verdict in ("usable", "either"), f"{line[:200]!r} was used; the oracle quarantines it"
        for name, kind in shapes.items():
            if kind in ("timestamp", "date"):
                continue
            got, want = row[name], values[name]
            assert same(got, want), f"{line[:200]!r}: {name} is {got!r}, not {want!r}"
        if rescue:
            got, want = sorted(json.loads(row[RESCUED] or "{}")), sorted(values["_rescued"])
            assert got == want, f"{line[:200]!r}: rescued {got}, not {want}"


def same(got: Any, want: Any) -> bool:
    """Equal, and of the same Python types all the way down (1 is not 1.0, nor True)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(same, got, want))
    return got == want and type(got) is type(want)


# Generators.
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(EXTREMES),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


def shaped(kind: Any) -> st.SearchStrategy:
    """Values mostly of a declared shape (objects with some of its fields and others, arrays
    of its items), now and then any JSON value instead, at every depth."""
    if isinstance(kind, dict):
        fields = st.fixed_dictionaries({}, optional={name: shaped(k) for name, k in kind.items()})
        others = st.dictionaries(st.text(max_size=5), json_values, max_size=2)
        shape = st.tuples(fields, others).map(lambda parts: {**parts[1], **parts[0]})
    elif isinstance(kind, list):
        shape = st.lists(shaped(kind[0]), max_size=3)
    else:
        return json_values
    return st.one_of(shape, shape, json_values)


@st.composite
def records(draw, shapes: dict[str, Any]) -> bytes:
    """A record of the declared fields (some left out), each mostly of its shape, a few
    undeclared ones, and now and then a number written out as no JSON library would."""
    schema = shapes
    record = {name: draw(shaped(kind)) for name, kind in shapes.items() if draw(st.integers(0, 5))}
    record |= draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3))
    text = json.dumps(record, ensure_ascii=draw(st.booleans()))
    if schema and draw(st.integers(0, 3)) == 0:
        name = draw(st.sampled_from(sorted(schema)))
        number = draw(st.sampled_from(RAW_NUMBERS))
        text = json.dumps({**record, name: "@"}).replace('"@"', number)
    return text.encode("utf-8", "surrogatepass")


def lines_of(shapes: dict[str, Any]):
    line = st.one_of(records(shapes), st.binary(max_size=200), st.text(max_size=60).map(lambda t: t.encode()))
    return st.lists(line, min_size=1, max_size=20)


PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_any_line_is_used_as_it_is_or_quarantined_with_a_reason(name):
    @PROPERTY
    @given(lines_of(SHAPES[name]))
    def holds(lines: list[bytes]) -> None:
        check(lines, name)

    holds()


@pytest.mark.parametrize("name", ["github_activity", "nested"])
def test_with_rescue_any_json_object_is_used_and_what_does_not_fit_is_rescued_by_path(name):
    @PROPERTY
    @given(lines_of(SHAPES[name]))
    def holds(lines: list[bytes]) -> None:
        check(lines, name, rescue=True)

    holds()


def _deep(opener: str, closer: str, n: int, inside: str = "1") -> str:
    return opener * n + inside + closer * n


ADVERSARIAL = {
    "100,000 [": "[" * 100_000,
    "100,000 [ closed": _deep("[", "]", 100_000),
    "100,000 objects": _deep('{"a":', "}", 100_000),
    "deep in an undeclared field": '{"user_id": "u", "deep": ' + _deep("[", "]", 100_000) + "}",
    "deep in a declared field": '{"user_id": ' + _deep("[", "]", 5_000) + "}",
    "as deep as allowed": '{"user_id": "u", "d": ' + _deep("[", "]", MAX_DEPTH - 1) + "}",
    "one level too deep": '{"user_id": "u", "d": ' + _deep("[", "]", MAX_DEPTH) + "}",
    "brackets in a string": json.dumps({"user_id": "[" * 100_000}),
    "1 MiB string": json.dumps({"user_id": "x" * 2**20, "event": "y" * 2**20}),
    "100,000 keys": json.dumps({f"k{i}": i for i in range(100_000)} | {"user_id": "u"}),
    "duplicate keys, last wins": '{"user_id": "a", "user_id": "b"}',
    "duplicate keys, first of another type": '{"user_id": 1, "user_id": "b"}',
    "NUL escaped": '{"user_id": "a\\u0000b"}',
    "NUL raw": '{"user_id": "a\x00b"}',
    "lone surrogate escaped": '{"user_id": "a\\ud800"}',
    "lone low surrogate escaped": '{"user_id": "\\udc00"}',
    "surrogate pair escaped": '{"user_id": "\\ud83d\\ude00"}',
    "a number beyond a double": '{"user_id": "u", "num_steps": 1e999, "temperature": 1e999, "amount": -1e999}',
    "a huge integer": '{"user_id": "u", "num_steps": 123456789012345678901234567890, "amount": 1' + "0" * 400 + "}",
    "the largest long and one more": '{"num_steps": 9223372036854775807, "device_id": 9223372036854775808}',
    "NaN and Infinity": '{"temperature": NaN, "amount": Infinity}',
    "an unknown field beyond a double": '{"user_id": "u", "x": 1e999}',
    "a BOM alone": "\ufeff",
    "only whitespace": " \t ",
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_adversarial_lines_are_used_as_they_are_or_quarantined(name):
    lines = [text.encode("utf-8", "surrogatepass") for text in ADVERSARIAL.values()]
    lines += [b"\xed\xa0\x80", b'{"user_id": "\xed\xa0\x80"}', b'{"user_id": "\xff"}']  # surrogates, not UTF-8
    check(lines, name)


def test_a_line_nested_too_deep_is_quarantined_with_its_depth_and_the_limit():
    lines = [
        text.encode() for text in ("[" * 100_000, ADVERSARIAL["one level too deep"], ADVERSARIAL["as deep as allowed"])
    ]
    rows = decode(lines, {"user_id": "string"})
    assert [(r[REASON], r[DETAIL]) for r in rows] == [
        ("too_deeply_nested", f"100,000 levels of objects and arrays; the limit is {MAX_DEPTH}"),
        ("too_deeply_nested", f"{MAX_DEPTH + 1} levels of objects and arrays; the limit is {MAX_DEPTH}"),
        (None, None),
    ]


def test_numbers_outside_the_declared_type_are_quarantined_naming_the_field():
    schema = {"n": "long", "i": "int", "d": "double"}
    lines = [b'{"n": 9223372036854775808}', b'{"i": 2147483648}', b'{"d": 1e999}', b'{"n": 9223372036854775807}']
    rows = decode(lines, schema)
    assert [(r[REASON], r[DETAIL]) for r in rows] == [
        ("wrong_field_type", "n: expected long, got a number out of its range"),
        ("wrong_field_type", "i: expected int, got a number out of its range"),
        ("wrong_field_type", "d: expected double, got a number out of its range"),
        (None, None),
    ]
    assert rows[3]["n"] == 2**63 - 1


def test_a_batch_the_decoder_fails_on_names_its_file_for_the_way_past_it():
    """Not a line's fault (a bug): the error names the file, which `_data_failure` turns
    into the quarantine-file command (jobs/run/failure.py)."""
    from jobs.run.failure import _READ_FAILED
    from tests.reference.decode import ReadFailed

    batch = pa.RecordBatch.from_pydict({LINE: pa.array([7], pa.int64()), SOURCE_FILE: ["file:///l/a.json"]})
    with pytest.raises(ReadFailed) as failed:
        list(LineDecoder((("a", "string"),), max_depth=MAX_DEPTH)(iter([batch])))
    message = f"tests.reference.decode.ReadFailed: {failed.value}"
    assert message.startswith("tests.reference.decode.ReadFailed: reading file:///l/a.json: ArrowNotImplementedError: ")
    assert _READ_FAILED.search(message).group(1) == "file:///l/a.json"
