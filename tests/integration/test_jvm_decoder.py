"""The JVM's decoder (the product's jar) against its reference, the Python decoder
(tests/reference/decode.py), line by line: the same verdict (blank, used or quarantined), the same
reason, the same detail where the product writes it (not the JSON parsers' own words for
malformed JSON), the same values, new fields and rescued values. The lines are the property
tests' (tests/unit/test_poison_properties.py: arbitrary bytes, records of each shipped
schema with values of every JSON type, extreme numbers, deep nesting, huge strings, many
and duplicate keys, NUL and surrogates) and the JSON conformance corpus."""

from __future__ import annotations

import decimal
import json
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import example, given

from jobs import declare
from jobs.columns import BLOCK_START, DETAIL, FILE_SIZE, LINE, NEW_FIELDS, REASON, RESCUED, SOURCE_FILE
from jobs.flow.functions import decoder_config
from tests.reference.decode import LineDecoder
from tests.unit.test_poison_properties import ADVERSARIAL, PROPERTY, SHAPES, lines_of

SOURCES = {name: p.source for name, p in declare.load_all().items() if not p.source.infer_schema}
SOURCES |= {
    f"{name}.{p.join.source.name}": p.join.source for name, p in declare.load_all().items() if getattr(p, "join", None)
}
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "jsontestsuite"
# Details the product writes itself; malformed JSON's are each parser's own words.
OUR_DETAILS = ("wrong_field_type", "too_deeply_nested", "record_too_large", "invalid_encoding", "not_a_json_object")


def reference(lines: list[bytes], source, **options: Any) -> list[dict]:
    decoder = LineDecoder(
        tuple(source.fields.items()),
        coerce=options.get("coerce", source.types == "coerce"),
        new_fields=options.get("new_fields", source.new_fields != "ignore"),
        rescue=options.get("rescue", source.on_type_mismatch == "rescue"),
        max_depth=source.max_depth,
    )
    batch = pa.RecordBatch.from_pydict(
        {
            LINE: pa.array(lines, pa.binary()),
            SOURCE_FILE: ["file:///landing/f.json"] * len(lines),
            BLOCK_START: pa.array([0] * len(lines), pa.int64()),
            FILE_SIZE: pa.array([1] * len(lines), pa.int64()),
        }
    )
    rows = {row[LINE]: row for out in decoder(iter([batch])) for row in out.to_pylist()}
    verdicts = []
    for line in lines:
        row = rows.get(line)
        if row is None:
            verdicts.append({"blank": True})
            continue
        values = {name: _plain(row[name]) for name in source.fields} if row[REASON] is None else None
        verdicts.append(
            {
                "reason": row[REASON],
                "detail": row[DETAIL],
                "values": values,
                "new_fields": row.get(NEW_FIELDS),
                "rescued": row.get(RESCUED),
            }
        )
    return verdicts


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    return value


def jvm(spark, lines: list[bytes], source, **options: Any) -> list[dict]:
    config = json.loads(decoder_config(source))
    config.update({k: v for k, v in options.items()})
    decoder = spark.sparkContext._jvm.io.triggeronce.jobs.decode.LineDecoder(json.dumps(config))
    packed = b"".join(struct.pack(">i", len(line)) + line for line in lines)
    verdicts = json.loads(decoder.verdicts(bytearray(packed)))
    for verdict in verdicts:
        if verdict.get("reason") is not None:
            verdict["values"] = None
    return verdicts


def same(spark, lines: list[bytes], source, **options: Any) -> None:
    for line, want, got in zip(
        lines, reference(lines, source, **options), jvm(spark, lines, source, **options), strict=True
    ):
        shown = repr(line[:300])
        assert got.get("blank", False) == want.get("blank", False), f"{shown}: blank {got} / {want}"
        if want.get("blank"):
            continue
        assert got["reason"] == want["reason"], (
            f"{shown}: {got['reason']} ({got['detail']}), not {want['reason']} ({want['detail']})"
        )
        if want["reason"] in OUR_DETAILS:
            assert got["detail"] == want["detail"], shown
        assert _same_values(got["values"], want["values"]), f"{shown}: {got['values']} / {want['values']}"
        assert got["rescued"] == want["rescued"], shown
        assert got["new_fields"] == want["new_fields"], shown


def _same_values(got: Any, want: Any) -> bool:
    """Equal, a whole number not taken for a float (1 is not 1.0), a double to the bit."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_same_values(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_same_values, got, want))
    if isinstance(want, float):
        return isinstance(got, float) and repr(got) == repr(want)  # -0.0 is not 0.0
    return got == want and type(got) is type(want)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_generated_line_gets_the_reference_s_verdict_and_reason(spark, name):
    source = SOURCES[name]

    @PROPERTY
    @given(lines_of(SHAPES[name]))
    def holds(lines: list[bytes]) -> None:
        same(spark, lines, source)

    holds()


@pytest.mark.parametrize("name", ["github_activity", "nested_rescue"])
def test_with_rescue_new_fields_and_coerce_the_same(spark, name):
    source = SOURCES["github_activity"]
    options = {"rescue": True} if name == "github_activity" else {"rescue": True, "new_fields": True, "coerce": True}

    @PROPERTY
    @given(lines_of(SHAPES["github_activity"]))
    @example([b'{"id": 1e999, "actor": {"id": [{1e999: null}]}}'])  # a type error before a syntax error
    def holds(lines: list[bytes]) -> None:
        same(spark, lines, source, **options)

    holds()


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_adversarial_lines_the_same(spark, name):
    lines = [text.encode("utf-8", "surrogatepass") for text in ADVERSARIAL.values()]
    lines += [b"\xed\xa0\x80", b'{"user_id": "\xed\xa0\x80"}', b'{"user_id": "\xff"}', b"\xef\xbb\xbf", b"\xc2\xa0"]
    lines += [b'{"x": 1} x', b'{"x": 1}{"x": 2}', b"[1]", b'"x"', b"1.5", b"null", b'{"a": "\\ud800x"}']
    lines += [b"x" * (64 * 2**20 + 1)]
    same(spark, lines, SOURCES[name])


@pytest.mark.skipif(not CORPUS.exists(), reason="the JSON conformance corpus is not on this machine")
def test_the_json_conformance_corpus_the_same(spark):
    """Every case of JSONTestSuite, as a line, against a schema of one field of each type."""
    files = sorted(CORPUS.rglob("*.json"))
    assert files
    lines = [f.read_bytes().replace(b"\n", b" ").replace(b"\r", b" ") for f in files]
    for name in ("clickstream", "github_activity", "device_steps"):
        same(spark, lines, SOURCES[name])


def test_the_tally_is_an_accumulator_spark_merges_but_does_not_show(spark):
    """Named accumulators are shown, so printed whole at every task's end: with 100,000
    files that cost a small-file backlog a third of its time (and threw as tasks merged)."""
    from jobs.flow.tally import Tally

    tally = Tally(spark).jvm
    assert tally.isRegistered() and not tally.name().isDefined()
