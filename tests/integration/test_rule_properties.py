"""Property-based test of row rules, in Spark: for every shipped pipeline with rules, records
of its declared fields holding any value of their type (huge and tiny numbers, -0.0, any
text, quotes, the LIKE wildcards, values just inside and outside each rule's range) or none.
The product's evaluation (Spark, ANSI off) never fails and decides each usable record as the
model's does (DuckDB, from the YAML): the same rules broken, and the first quarantining one
as its reason. Fail rules are declared warn here, so that a broken one is seen, not raised.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs import declare
from jobs.columns import BROKEN, LINE, LINE_NUMBER, QUARANTINE_REASON, SOURCE_FILE
from jobs.flow.parse import parse_events
from jobs.flow.patterns import pattern_of
from tests.model import RuleBook

EXAMPLES = int(os.environ.get("JOBS_HYPOTHESIS_SPARK_EXAMPLES", "4"))
LINES = 40
RULED = [  # (pipeline, its source's index): each source of each shipped pipeline with rules
    (name, index)
    for name, p in sorted(declare.load_all().items())
    if p.rules and not p.source.infer_schema
    for index in range(len(pattern_of(p).sources))
]
# Values rules here compare with, and their neighbours.
EDGES = [-50, -50.0000001, 150, 150.0000001, 0, -1, -0.0, 50000, 50001, 2**63 - 1, -(2**63), 1e308, -1e308, 5e-324]
TEXTS = ["click", "clik", "view", "scroll", "purchase", "", "loadtest-", "loadtest-1", "LOADTEST-1", "ad-1", "ad-",
         "ad_1", "promo-7", "%", "_", "a'b", "PushEvent", "pushevent", "SponsorshipEvent", "é\u0301", "\u2028"]  # fmt: skip
TIMES = {"iso8601": "2023-07-30T10:00:00Z", "yyyy-MM-dd HH:mm:ss": "2023-07-30 10:00:00"}


def _value(kind):
    """Any JSON value of a declared type (a mapping is an object, a list an array), or null."""
    if isinstance(kind, dict):
        inner = st.fixed_dictionaries({}, optional={name: _value(k) for name, k in kind.items()})
    elif isinstance(kind, list):
        inner = st.lists(_value(kind[0]), max_size=3)
    elif kind == "string":
        inner = st.one_of(st.sampled_from(TEXTS), st.text(max_size=12))
    elif kind == "long":
        inner = st.one_of(st.sampled_from([e for e in EDGES if isinstance(e, int)]), st.integers(-(2**63), 2**63 - 1))
    elif kind == "double":
        inner = st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=False, allow_infinity=False))
    else:
        inner = st.none()
    return st.one_of(st.none(), inner, inner, inner)


@st.composite
def records(draw, schema: dict, source) -> dict:
    record = {name: draw(_value(kind)) for name, kind in schema.items()}
    for path in source.required:  # present, so that most records reach the rules
        *parents, last = path.split(".")
        inner = record
        for name in parents:
            inner[name] = inner[name] if isinstance(inner.get(name), dict) else {}
            inner = inner[name]
        inner[last] = inner.get(last) if inner.get(last) is not None else "x"
    record[source.event_time.column] = TIMES[source.event_time.format]
    return record


@pytest.mark.parametrize(("name", "index"), RULED)
def test_rules_decide_any_record_as_the_model_does_and_never_fail(spark, name, index):
    import yaml

    from jobs.declare.load import pipelines_dir

    raw = yaml.safe_load((pipelines_dir() / f"{name}.yaml").read_text())
    raw["rules"] = [
        {**r, "on_violation": "warn" if r["on_violation"] == "fail" else r["on_violation"]} for r in raw["rules"]
    ]
    pipeline = declare.from_mapping(raw)
    book = RuleBook(
        raw["rules"], [raw["source"]["schema"], *([raw["join"]["source"]["schema"]] if raw.get("join") else [])]
    )
    source = pattern_of(pipeline).sources[index]
    rules = pipeline.rules_for(source)
    names = [rule.name for rule in rules]

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(records(book.schemas[index], source), min_size=LINES, max_size=LINES))
    def holds(drawn) -> None:
        lines = spark.createDataFrame(
            [(json.dumps(r), "f.json") for r in drawn], f"{LINE} string, {SOURCE_FILE} string"
        )
        parsed = parse_events(lines.coalesce(1), source, rules=rules)  # never raises
        rows = parsed.select(LINE_NUMBER, BROKEN, QUARANTINE_REASON).orderBy(LINE_NUMBER).collect()
        assert len(rows) == len(drawn)
        for row, record in zip(rows, drawn, strict=True):
            reason = row[QUARANTINE_REASON]
            if reason is not None and not reason.startswith("rule:"):
                assert row[BROKEN] == 0  # a record its parse quarantined is not checked
                continue
            broken = book.broken(record)
            assert [n for bit, n in enumerate(names) if row[BROKEN] >> bit & 1] == [r["name"] for r in broken], (
                json.dumps(record)
            )
            first = next((r["name"] for r in broken if r["on_violation"] == "quarantine"), None)
            assert reason == (f"rule:{first}" if first else None), json.dumps(record)

    holds()
