"""Row rules: what each record must be, beyond its schema, in Spark SQL over the source's
fields, and what to do with a record that breaks one (jobs/flow/rules.py applies them):

    rules:
      - name: known_event
        check: "event IN ('click', 'view', 'purchase')"
        on_violation: quarantine    # warn: keep it and count it | quarantine | fail the batch

A record breaks a rule when its check is false. A check that is null (a field missing)
does not break it, as in SQL's CHECK constraints: write `x IS NOT NULL AND ...` for a value
that must be there. A check reads one record: no aggregates, windows, subqueries, and only
functions that decide from the row alone, the same each time its batch is read again
(row_functions.txt, an allowlist: not rand, now, current_user, reflect). The check's text
goes to Spark as it is; it is read here, without Spark, for the fields it names.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from itertools import pairwise
from typing import Literal

import sqlglot
from pydantic import field_validator, model_validator
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from jobs.declare.parts import Part
from jobs.declare.problems import did_you_mean
from jobs.units import Name

ACTIONS = ("warn", "quarantine", "fail")
MAX_RULES = 63  # a record's broken rules travel as the bits of one long (jobs/flow/rules.py)
REASON_PREFIX = "rule:"  # a quarantined record's reason: rule:<name>
RULE_FAILED = "a record breaks rule"  # how a fail rule's error starts (jobs/run/failure.py finds it)


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
    for niladic in tree.find_all(*_NILADIC):  # `current_timestamp` without parentheses calls it too
        raise ValueError(
            f"check {check!r} reads {niladic.sql_name().lower()}, which answers differently when its batch is "
            "read again (jobs/declare/row_functions.txt)"
        )
    for name in functions_called(check):
        if name not in spark_functions():
            close = did_you_mean(name, spark_functions())
            raise ValueError(f"check {check!r} calls {name}(), which is not a Spark SQL function{close}")
        if name not in row_functions():
            raise ValueError(
                f"check {check!r} calls {name}(), which an expression of a declaration may not: it does not decide "
                "from the row alone, the same each time its batch is read (jobs/declare/row_functions.txt)"
            )
    paths = [_path(column) for column in tree.find_all(exp.Column) if column.name]
    if not paths:
        raise ValueError(f"check {check!r} reads no field")
    return tuple(dict.fromkeys(paths))


# What sqlglot reads a bare `current_timestamp` (no parentheses) as; a bare word it reads as a
# column (`user`, `current_time`) is a field the declaration must have, which Spark reads first.
_NILADIC = tuple(
    getattr(exp, name)
    for name in ("CurrentTimestamp", "CurrentDate", "CurrentTime", "CurrentUser", "SessionUser", "CurrentSchema")
    if hasattr(exp, name)
)


def functions_called(expression: str) -> list[str]:
    """The names of the functions an expression calls (lower case), as Spark reads them: every
    name before a '(' (quoted in backticks, qualified as `system.builtin.rand`, or a keyword that
    is also a function: `exists(`); SQL's own words before a '(' (`IN (`, `AND (`) are none. Read
    from the words, not from a parse whose names are sqlglot's own."""
    tokens = Spark().tokenize(expression)
    called = []
    for token, after in pairwise(tokens):
        if after.token_type != TokenType.L_PAREN:
            continue
        name = token.text.lower()
        if token.token_type in (TokenType.VAR, TokenType.IDENTIFIER) or name in spark_functions():
            called.append(name)
    return called


@cache
def spark_functions() -> frozenset[str]:
    """The names of Spark SQL's functions (spark_functions.txt)."""
    return _names("spark_functions.txt")


@cache
def row_functions() -> frozenset[str]:
    """The functions an expression of a declaration may call (row_functions.txt: an allowlist)."""
    return _names("row_functions.txt")


def _names(listed: str) -> frozenset[str]:
    text = resources.files("jobs.declare").joinpath(listed).read_text()
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
