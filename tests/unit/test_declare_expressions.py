"""A declaration's expressions, checked when it loads, with no JVM (issue 72): computed
columns, `where`, keys and aggregates over them. Each problem is named with its setting, the
field it misspells ("did you mean"), or the function it may not call and what to use instead."""

from __future__ import annotations

import pytest
import yaml

from jobs import declare
from jobs.declare.load import pipelines_dir

BASE = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())


def loaded(**changes: object) -> declare.PipelineBase:
    return declare.from_mapping({**BASE, "name": "mine", **changes})


def refused(**changes: object) -> str:
    with pytest.raises(declare.DeclarationError) as error:
        loaded(**changes)
    return str(error.value)


def test_a_declaration_with_every_kind_of_expression_loads():
    pipeline = loaded(
        columns={"user": "lower(user_id)", "id_length": "length(event_id)", "longer": "id_length > 3"},
        where="event <> 'scroll' AND exists(array(event), e -> e <> 'x')",  # a lambda's variable is no field
        keys=["user"],
        aggregates=[
            {"name": "events", "function": "count"},
            {"name": "longest", "function": "max", "column": "id_length"},
            {"name": "ids", "function": "approx_count_distinct", "column": "event_id", "relative_error": 0.02},
            {"name": "long_ones", "function": "count_if", "column": "longer"},
            {"name": "first_user", "function": "min_by", "column": "user", "by": "event_time"},
            {"name": "p90", "expression": "percentile_approx(id_length, 0.9)"},
        ],
    )
    assert [key.name for key in pipeline.keys] == ["user"] and pipeline.filters


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        (
            {"columns": {"user": "lower(usr_id)"}},
            "column 'user' field 'usr_id' is not in the source schema (did you mean 'user_id'?)",
        ),
        ({"where": "evnt = 'click'"}, "where field 'evnt' is not in the source schema (did you mean 'event'?)"),
        (
            {"columns": {"user": "lower(user_id)"}, "keys": ["usr"]},
            "key 'usr' is not in the source schema (did you mean 'user'?)",
        ),
        ({"columns": {"event": "upper(event)"}}, "column 'event' is already a field of the events"),
        ({"columns": {"a": "b", "b": "lower(user_id)"}}, "column 'a' reads 'b', which is computed after it"),
        ({"columns": {"r": "rand()"}}, "calls rand(), which an expression of a declaration may not"),
        ({"where": "true"}, "where 'true' reads no field"),
        (
            {"aggregates": [{"name": "n", "expression": "count(DISTINCT user_id)"}]},
            "which Spark's streaming aggregation cannot (it would keep every value of every window): use approx_count_distinct",
        ),
        ({"aggregates": [{"name": "n", "expression": "first(user_id)"}]}, "use min_by(value, event_time)"),
        ({"aggregates": [{"name": "n", "function": "max_by", "column": "user_id"}]}, "max_by needs 'by'"),
        ({"columns": {"event_time": "hour(eventtimestamp)"}}, "column 'event_time' may not be computed"),
    ],
)
def test_a_bad_expression_is_refused_naming_its_setting(changes, said):
    assert said in refused(**changes)
