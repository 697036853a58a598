"""`plan` and the run agree with Spark: over a pipeline with a checkpoint and state, a generated
change of its declaration (types of keys, values and aggregates; keys, window, watermark,
deduplication, rules, output; computed columns, `where`, keys and aggregates over them) is either `resumes` in the plan and a run that succeeds, or a
change the plan names and a run refused before Spark starts: never `resumes` before a run
that fails. `JOBS_HYPOTHESIS_EXAMPLES` raises the number of changes tried (default 12)."""

from __future__ import annotations

import copy
import json
import os
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs import declare
from jobs.change.plan import REPROCESS, RESUMES, plan
from jobs.lake.layout import Locations
from jobs.run.runner import RunFailed, RunRefused
from tests.helpers import land, run_pipeline

BASE = {
    "name": "orgs",
    "pattern": "window",
    "source": {
        "format": "json",
        "schema": {
            "id": "string",
            "org": {"login": "string", "seats": "long"},
            "n": "long",
            "x": "double",
            "ts": "string",
        },
        "required": ["id", "org.login"],
        "event_time": {"column": "ts", "format": "iso8601"},
    },
    "watermark": "5 minutes",
    "window": {"duration": "1 minute"},
    "keys": ["org.login"],
    "deduplicate": ["id"],
    "aggregates": [
        {"name": "events", "function": "count"},
        {"name": "n_sum", "function": "sum", "column": "n"},
        {"name": "x_max", "function": "max", "column": "x"},
    ],
    "rules": [{"name": "some_n", "check": "n >= 0", "on_violation": "quarantine"}],
    "output": {"format": "parquet"},
}


def _events(prefix: str, minute: int) -> list[str]:
    """Values every generated type reads (digits read as string, long and double)."""
    return [
        json.dumps(
            {
                "id": f"{prefix}{i}",
                "org": {"login": str(100 + i % 3), "seats": i},
                "n": i,
                "x": float(i),
                "ts": f"2023-07-30T10:{minute + i % 3:02d}:{i:02d}Z",
            }
        )
        for i in range(12)
    ]


def _set(path: str, value):
    def change(raw: dict) -> None:
        *parents, last = path.split("/")
        at = raw
        for part in parents:
            at = at[part]
        at[last] = value

    return change


def _drop(path: str):
    def change(raw: dict) -> None:
        *parents, last = path.split("/")
        at = raw
        for part in parents:
            at = at[part]
        at.pop(last)

    return change


def _computed(name: str, expression: str, raw: dict) -> None:
    raw.setdefault("columns", {})[name] = expression


def _aggregate(aggregate: dict, computed: tuple[str, str] | None = None):
    def change(raw: dict) -> None:
        if computed:
            _computed(*computed, raw)
        raw["aggregates"].append(aggregate)

    return change


def _computed_key(expression: str):
    def change(raw: dict) -> None:
        _computed("login", expression, raw)
        raw["keys"] = ["login"]

    return change


TYPES = st.sampled_from(["string", "long", "double"])
CHANGES = st.one_of(
    TYPES.map(lambda t: (f"key type {t}", _set("source/schema/org/login", t))),
    TYPES.map(lambda t: (f"summed value type {t}", _set("source/schema/n", t))),
    TYPES.map(lambda t: (f"max value type {t}", _set("source/schema/x", t))),
    TYPES.map(lambda t: (f"unheld field type {t}", _set("source/schema/org/seats", t))),
    TYPES.map(lambda t: (f"deduplicated field type {t}", _set("source/schema/id", t))),
    st.just(("a new field", _set("source/schema/extra", "string"))),
    st.just(("a second key", _set("keys", ["org.login", "id"]))),
    st.just(("no key", _drop("keys"))),
    st.sampled_from(["1 minute", "2 minutes"]).map(lambda d: (f"window {d}", _set("window/duration", d))),
    st.sampled_from(["5 minutes", "10 minutes", "1 hour"]).map(lambda w: (f"watermark {w}", _set("watermark", w))),
    st.just(("no deduplication", _drop("deduplicate"))),
    st.just(("deduplicated on two fields", _set("deduplicate", ["id", "org.login"]))),
    st.just(
        (
            "an aggregate added",
            lambda raw: raw["aggregates"].append({"name": "x_min", "function": "min", "column": "x"}),
        )
    ),
    st.just(("a rule changed", _set("rules", [{"name": "some_n", "check": "n >= 5", "on_violation": "warn"}]))),
    st.just(("no rules", _drop("rules"))),
    st.just(("partitioned output", _set("output/partition_by", "window_date"))),
    st.sampled_from(["n % 2 = 0", "x > 3"]).map(lambda w: (f"where {w}", _set("where", w))),
    st.sampled_from(["n * 2", "upper(id)"]).map(
        lambda e: (f"an unheld column {e}", lambda raw: _computed("m", e, raw))
    ),
    st.sampled_from(["lower(org.login)", "substring(org.login, 1, 2)", "length(org.login)"]).map(
        lambda e: (f"a computed key {e}", _computed_key(e))
    ),
    st.just(
        ("a max over a computed column", _aggregate({"name": "x2", "function": "max", "column": "x2"}, ("x2", "x * 2")))
    ),
    st.just(("a distinct count", _aggregate({"name": "ids", "function": "approx_count_distinct", "column": "id"}))),
    st.just(("an expression aggregate", _aggregate({"name": "spread", "expression": "max(x) - min(x)"}))),
)


def test_a_plan_that_says_resumes_is_a_run_that_succeeds(spark, tmp_path_factory):
    # Every change meets the checkpoint at the same paths (they are part of the contract): the
    # root the first run made is kept aside and put back before each.
    root = tmp_path_factory.mktemp("changes") / "root"
    kept = root.parent / "first-run"
    pipeline = declare.from_mapping(BASE)
    locations = Locations.resolve(pipeline.name, root=str(root))
    land(locations.landing, {"first.json": _events("a", 0)})
    assert run_pipeline(spark, pipeline, locations).status == "succeeded"
    shutil.copytree(root, kept)
    outcomes = []

    @settings(
        max_examples=int(os.environ.get("JOBS_HYPOTHESIS_EXAMPLES", "12")),
        deadline=None,
        derandomize=True,  # the same changes every run: a test that cannot pass by chance
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.lists(CHANGES, min_size=1, max_size=2, unique_by=lambda c: c[0]))
    def agrees(changes):
        raw = copy.deepcopy(BASE)
        for _, change in changes:
            change(raw)
        what = ", ".join(name for name, _ in changes)
        try:
            changed = declare.from_mapping(raw)
        except declare.DeclarationError:
            return  # a declaration the product refuses to load changes nothing
        shutil.rmtree(root)
        shutil.copytree(kept, root)
        here = Locations.resolve(changed.name, root=str(root))
        land(here.landing, {"second.json": _events("b", 20)})

        verdict = plan(spark, changed, here)
        try:
            ran = run_pipeline(spark, changed, here).status
        except RunRefused as refused:
            ran = f"refused: {refused}"
        except RunFailed as failed:
            ran = f"failed: {failed}"

        outcomes.append(verdict.verdict)
        if verdict.verdict == RESUMES:
            assert ran == "succeeded", f"{what}: plan said resumes, the run {ran}"
        else:
            assert verdict.verdict == REPROCESS and ran.startswith("refused"), f"{what}: plan {verdict.verdict}, {ran}"
            assert "rebuild" in ran, what

    agrees()
    assert RESUMES in outcomes, "no change that resumes was tried: the property says nothing"
