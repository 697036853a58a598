"""Row rules: what each record must be, beyond its schema, in Spark SQL over the source's
fields, and what to do with a record that breaks one (jobs/flow/rules.py applies them):

    rules:
      - name: known_event
        check: "event IN ('click', 'view', 'purchase')"
        on_violation: quarantine    # warn: keep it and count it | quarantine | fail the batch

A record breaks a rule when its check is false. A check that is null (a field missing)
does not break it, as in SQL's CHECK constraints: write `x IS NOT NULL AND ...` for a value
that must be there. A check reads one record: no aggregates, windows, subqueries, or
functions whose answer changes when a batch is read again (rand, now). The check's text
goes to Spark as it is; it is read here, without Spark, for the fields it names.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

import sqlglot
from pydantic import field_validator, model_validator
from sqlglot import exp
from sqlglot.errors import ParseError

from jobs.declare.parts import Part
from jobs.declare.problems import did_you_mean
from jobs.units import Name

ACTIONS = ("warn", "quarantine", "fail")
MAX_RULES = 63  # a record's broken rules travel as the bits of one long (jobs/flow/rules.py)
REASON_PREFIX = "rule:"  # a quarantined record's reason: rule:<name>
RULE_FAILED = "a record breaks rule"  # how a fail rule's error starts (jobs/run/failure.py finds it)
# Functions that answer differently each time, or stop the query: a rule must decide a
# record the same when its batch is read again (accounting, a rerun after a failure).
_UNSTABLE = {
    "rand", "randn", "random", "uuid", "shuffle", "now", "current_timestamp", "current_date", "current_time",
    "localtimestamp", "unix_timestamp", "monotonically_increasing_id", "spark_partition_id",
    "input_file_name", "input_file_block_start", "raise_error", "assert_true", "java_method", "reflect",
}  # fmt: skip


class Rule(Part):
    name: Name
    check: str
    on_violation: Literal["warn", "quarantine", "fail"]

    @field_validator("check")
    @classmethod
    def _stripped(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def _reads_one_record(self) -> Rule:
        fields_read(self.check)  # checked by each rule, so that every bad one is reported at once
        return self

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields (or paths, 'repo.name') the check reads, in the order it names them."""
        return fields_read(self.check)

    @property
    def reason(self) -> str:
        return f"{REASON_PREFIX}{self.name}"


@cache
def fields_read(check: str) -> tuple[str, ...]:
    """The paths a check reads; refused (ValueError) when it is not one Spark SQL expression
    over a record."""
    try:
        parsed = sqlglot.parse(check, read="spark")
    except ParseError as error:
        where = error.errors[0] if error.errors else {}
        at = f" (near column {where['col']})" if where.get("col") else ""
        raise ValueError(f"check {check!r} is not a Spark SQL expression{at}") from None
    if len(parsed) != 1 or parsed[0] is None:
        raise ValueError(f"check {check!r} is not one Spark SQL expression")
    tree = parsed[0]
    if tree.find(exp.Query):
        raise ValueError(f"check {check!r} has a query in it; a check reads one record's fields")
    if tree.find(exp.AggFunc) or tree.find(exp.Window):
        raise ValueError(f"check {check!r} aggregates; a check reads one record (a whole-table check is a suite's)")
    for function in tree.find_all(exp.Func):
        name = (function.name if isinstance(function, exp.Anonymous) else function.sql_name()).lower()
        if isinstance(function, exp.Anonymous) and name not in spark_functions():
            close = did_you_mean(name, spark_functions())
            raise ValueError(f"check {check!r} calls {name}(), which is not a Spark SQL function{close}")
        if name in _UNSTABLE:
            raise ValueError(f"check {check!r} calls {name}(), which answers differently when a batch is read again")
    paths = [_path(column) for column in tree.find_all(exp.Column) if column.name]
    if not paths:
        raise ValueError(f"check {check!r} reads no field")
    return tuple(dict.fromkeys(paths))


@cache
def spark_functions() -> frozenset[str]:
    """The names of Spark SQL's functions (spark_functions.txt)."""
    text = resources.files("jobs.declare").joinpath("spark_functions.txt").read_text()
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def _path(column: exp.Column) -> str:
    """A column's path, with any fields of it taken after (`a.b.c.d.e`)."""
    parts, node = [part.name for part in column.parts], column
    while isinstance(node.parent, exp.Dot) and node.parent.this is node:
        node = node.parent
        parts.append(node.expression.name)
    return ".".join(parts)


def rule_problems(rules: tuple[Rule, ...]) -> list[str]:
    """What the rules say of each other (each rule checks its own expression): names are
    unique, and not more than MAX_RULES."""
    problems = [f"{len(rules)} rules; a pipeline has at most {MAX_RULES}"] if len(rules) > MAX_RULES else []
    names = [rule.name for rule in rules]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"rule names {repeated} are used more than once; a rule's name is its count's name")
    return problems
