"""Row rules in a declaration: read without Spark, refused on load in one line naming the rule."""

from __future__ import annotations

import copy

import pytest
import yaml

from jobs import declare
from jobs.declare.expressions import spark_functions
from jobs.declare.load import pipelines_dir
from jobs.declare.rules import MAX_RULES
from tests.unit.test_declare import VALID


def with_rules(*rules: dict) -> dict:
    return copy.deepcopy(VALID) | {"rules": list(rules)}


def rule(check: str, action: str = "warn", name: str = "r") -> dict:
    return {"name": name, "check": check, "on_violation": action}


def test_a_rule_reads_the_fields_and_paths_it_names():
    pipeline = declare.from_mapping(with_rules(rule("amount BETWEEN 0 AND 100 AND user_id RLIKE '^u[0-9]+$'")))
    assert pipeline.rules[0].fields == ("amount", "user_id")
    assert pipeline.rules[0].reason == "rule:r"
    lambdas = declare.from_mapping(with_rules(rule("user_id IS NULL OR exists(array(amount), a -> a > 0)")))
    assert lambdas.rules[0].fields == ("user_id", "amount")  # a lambda's variable is not a field


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([rule("amout > 0")], "rule 'r' field 'amout' is not in the source schema"),
        ([rule("amount >")], "rule 'r': check 'amount >' is not a Spark SQL expression (near column 8)"),
        ([rule("amount > 0; DROP TABLE t")], "is not one Spark SQL expression"),
        ([rule("sum(amount) > 0")], "aggregates; a check reads one record"),
        ([rule("amount > (SELECT 1)")], "has a query in it"),
        ([rule("rand() > 0.5")], "calls rand(), which an expression of a declaration may not"),
        ([rule("amont_ok(amount)")], "calls amont_ok(), which is not a Spark SQL function"),
        ([rule("1 = 1")], "reads no field"),
        ([rule("amount > 0", "drop")], "rule 'r' on_violation 'drop' is not one of 'warn', 'quarantine' or 'fail'"),
        ([{"name": "r", "check": "amount > 0"}], "rule 'r': missing 'on_violation'"),
        ([rule("amount > 0"), rule("amount < 9")], "rule names ['r'] are used more than once"),
        ([rule("amount > 0", name=f"r{n}") for n in range(MAX_RULES + 1)], f"a pipeline has at most {MAX_RULES}"),
    ],
)
def test_a_bad_rule_is_refused_on_load_in_one_line_naming_it(rules, message):
    with pytest.raises(declare.DeclarationError) as error:
        declare.from_mapping(with_rules(*rules))
    assert message in str(error.value)
    assert "\n" not in str(error.value).strip()


def test_every_bad_rule_is_reported_at_once_with_the_name_it_is_spelt_like():
    """Before, the first bad rule alone, and no guess."""
    rules = [
        rule("amout > 0", name="positive"),
        rule("lenght(user_id) > 2", name="long_id"),
        rule("amount < 100", "drop", name="small"),
        rule("user_di LIKE 'u%'", name="user_prefix"),
        rule("amount IS NOT NULL", name="present"),
    ]
    with pytest.raises(declare.DeclarationError) as error:
        declare.from_mapping(with_rules(*rules))
    assert str(error.value).split("; ") == [
        "pipeline 'demo_counts' rule 'long_id': check 'lenght(user_id) > 2' calls lenght(), which is not a Spark "
        "SQL function (did you mean 'length'?)",
        "pipeline 'demo_counts' rule 'small' on_violation 'drop' is not one of 'warn', 'quarantine' or 'fail'",
        "pipeline 'demo_counts': rule 'positive' field 'amout' is not in the source schema (did you mean 'amount'?)",
        "pipeline 'demo_counts': rule 'user_prefix' field 'user_di' is not in the source schema "
        "(did you mean 'user_id'?)",
    ]


def test_a_join_rule_reads_one_side_and_one_on_the_key_is_on_both():
    pipeline = declare.load("ad_clicks")
    left, right = pipeline.source, pipeline.join.source
    assert [r.name for r in pipeline.rules_for(left)] == [r.name for r in pipeline.rules_for(right)] == ["known_ad"]
    raw = yaml.safe_load((pipelines_dir() / "ad_clicks.yaml").read_text())
    both = raw | {"rules": [rule("impression_id IS NOT NULL AND click_id IS NOT NULL", name="both")]}
    with pytest.raises(declare.DeclarationError, match=r"rule 'both' reads .* a rule reads one source's records"):
        declare.from_mapping(both)
    one = declare.from_mapping(raw | {"rules": [rule("click_id LIKE 'c%'", name="clicks_only")]})
    assert (one.rules_for(left), [r.name for r in one.rules_for(right)]) == ((), ["clicks_only"])


def test_the_list_of_spark_functions_is_the_installed_spark_s(spark):
    # Spark's own functions: the system ones (a run registers its decoder and counter in the session).
    installed = {row.function for row in spark.sql("SHOW SYSTEM FUNCTIONS").collect() if row.function[0].isalpha()}
    assert spark_functions() == installed


@pytest.mark.parametrize(
    "check",
    [
        "try_reflect('java.lang.System', 'exit', 42) IS NULL OR amount > 0",  # ended the run's JVM in review
        "java_method('java.lang.System', 'getenv', 'HOME') = user_id",
        "uniform(0, 10, 42) < amount",
        "rand() < amount",
        "current_user() = user_id",
        "current_timestamp() > to_timestamp(user_id)",
        "current_timestamp > to_timestamp(user_id)",  # without parentheses, a call all the same
        "`rand`() < amount",  # quoted
        "system.builtin.rand() < amount",  # qualified
        "IDENTIFIER('java_method')('java.lang.System', 'exit', 1) = amount",  # a function named by a string
    ],
)
def test_a_rule_calls_only_functions_that_decide_from_the_row_alone(check):
    """An allowlist (jobs/declare/row_functions.txt): Spark's analyser counts current_user and
    current_timestamp as deterministic, and try_reflect reaches any class of the JVM."""
    with pytest.raises(declare.DeclarationError) as error:
        declare.from_mapping(with_rules(rule(check, name="guarded")))
    said = str(error.value)
    assert "rule 'guarded'" in said and "\n" not in said.strip()
    called = check.split("(", 1)[0].split(".")[-1].strip("`").split()[-1].lower()
    assert called in said or "not a Spark SQL expression" in said


def test_the_allowlist_names_only_spark_functions_and_none_that_read_outside_the_row():
    from jobs.declare.expressions import row_functions

    assert row_functions() <= spark_functions()
    refused = {"rand", "uniform", "randstr", "uuid", "shuffle", "now", "current_user", "current_timestamp"}
    refused |= {"reflect", "java_method", "try_reflect", "raise_error", "input_file_name", "from_protobuf", "xpath"}
    assert refused <= spark_functions() and not refused & row_functions()
