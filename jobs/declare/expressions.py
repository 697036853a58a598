"""The Spark SQL a declaration holds (a rule's check, a computed column, `where`, an aggregate's
expression), read here without Spark: one expression, the fields it reads, and only functions
that decide from the rows alone, the same each time a batch is read again.

    a row's expression        row_functions.txt, an allowlist (not rand, now, current_user, reflect)
    an aggregate's            the same, and the aggregates of aggregate_functions.txt, which Spark's
                              streaming aggregation supports and which give one answer whatever
                              order the rows arrive in (not first, collect_list, count(DISTINCT))

The text goes to Spark as it is: reading it here only refuses what must not run, with the
setting's name, before any JVM starts (DAG files load declarations). Types are Spark's to
check (jobs/flow/expressions.py, at `plan` and before a run).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from itertools import pairwise

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from jobs.declare.problems import did_you_mean

ROW_FUNCTIONS = "jobs/declare/row_functions.txt"
AGGREGATE_FUNCTIONS = "jobs/declare/aggregate_functions.txt"

# What sqlglot reads a bare `current_timestamp` (no parentheses) as; a bare word it reads as a
# column (`user`, `current_time`) is a field the declaration must have, which Spark reads first.
_NILADIC = tuple(
    getattr(exp, name)
    for name in ("CurrentTimestamp", "CurrentDate", "CurrentTime", "CurrentUser", "SessionUser", "CurrentSchema")
    if hasattr(exp, name)
)


@cache
def paths_read(text: str, what: str, *, aggregate: bool = False) -> tuple[str, ...]:
    """The paths (`repo.name`) `text` reads, in the order it names them; refused (ValueError,
    starting with `what`) when it is not one Spark SQL expression a declaration may hold.
    `aggregate`: an aggregate's expression, which aggregates the rows of a group."""
    tree = _one_expression(text, what)
    if tree.find(exp.Query):
        raise ValueError(f"{what} has a query in it; it reads the fields of {'rows' if aggregate else 'one row'}")
    if tree.find(exp.Window):
        raise ValueError(f"{what} ranks rows (OVER): a declaration's expressions read rows as they come")
    for niladic in tree.find_all(*_NILADIC):  # `current_timestamp` without parentheses calls it too
        raise ValueError(
            f"{what} reads {niladic.sql_name().lower()}, which answers differently when its batch is read again "
            f"({ROW_FUNCTIONS})"
        )
    called = functions_called(text)
    if not aggregate and (tree.find(exp.AggFunc) or any(name in aggregate_functions() for name in called)):
        kind = what.split()[0]  # check, column, where
        raise ValueError(f"{what} aggregates; a {kind} reads one record (a window's aggregates are declared as such)")
    for name in called:
        _refuse_call(name, what, aggregate)
    if aggregate:
        _refuse_unless_aggregating(tree, called, what)
    paths = [_path(column) for column in _columns(tree)]
    if not paths and not aggregate:
        raise ValueError(f"{what} reads no field")
    return tuple(dict.fromkeys(paths))


def _one_expression(text: str, what: str) -> exp.Expression:
    try:
        parsed = sqlglot.parse(text, read="spark")
    except ParseError as error:
        where = error.errors[0] if error.errors else {}
        at = f" (near column {where['col']})" if where.get("col") else ""
        raise ValueError(f"{what} is not a Spark SQL expression{at}") from None
    if len(parsed) != 1 or parsed[0] is None:
        raise ValueError(f"{what} is not one Spark SQL expression")
    return parsed[0]


def _refuse_call(name: str, what: str, aggregate: bool) -> None:
    if name not in spark_functions():
        raise ValueError(
            f"{what} calls {name}(), which is not a Spark SQL function{did_you_mean(name, spark_functions())}"
        )
    if name in row_functions() or (aggregate and name in aggregate_functions()):
        return
    if aggregate and name in refused_aggregates():
        raise ValueError(f"{what} calls {name}(): {refused_aggregates()[name]}")
    raise ValueError(
        f"{what} calls {name}(), which an expression of a declaration may not: it does not decide "
        f"from the {'rows' if aggregate else 'row'} alone, the same each time its batch is read "
        f"({AGGREGATE_FUNCTIONS if aggregate else ROW_FUNCTIONS})"
    )


def _refuse_unless_aggregating(tree: exp.Expression, called: list[str], what: str) -> None:
    if any(isinstance(node, exp.Distinct) for node in tree.walk()):
        raise ValueError(
            f"{what} counts distinct values exactly, which Spark's streaming aggregation cannot "
            "(it would keep every value of every window): use approx_count_distinct(...)"
        )
    if not any(name in aggregate_functions() for name in called):
        raise ValueError(f"{what} aggregates nothing; an aggregate's expression calls one of {AGGREGATE_FUNCTIONS}")


def _columns(tree: exp.Expression) -> list[exp.Column]:
    """The columns an expression reads: not the variables of its lambdas (`x -> x + 1`)."""
    found = []
    for column in tree.find_all(exp.Column):
        if not column.name:
            continue
        lambdas = [node for node in _ancestors(column) if isinstance(node, exp.Lambda)]
        bound = {param.name for node in lambdas for param in node.expressions}
        if column.parts[0].name not in bound:
            found.append(column)
    return found


def _ancestors(node: exp.Expression):
    while node.parent is not None:
        node = node.parent
        yield node


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
    return frozenset(_listed("spark_functions.txt"))


@cache
def row_functions() -> frozenset[str]:
    """The functions an expression of a declaration may call (row_functions.txt: an allowlist)."""
    return frozenset(_listed("row_functions.txt"))


@cache
def aggregate_functions() -> frozenset[str]:
    """The aggregates an aggregate's expression may call (aggregate_functions.txt: an allowlist)."""
    return frozenset(name for name in _listed("aggregate_functions.txt") if ":" not in name)


@cache
def refused_aggregates() -> dict[str, str]:
    """Spark's aggregates an aggregate's expression may not call, and what to use instead."""
    lines = [line for line in _listed("aggregate_functions.txt") if ":" in line]
    return {name.strip(): why.strip() for name, why in (line.split(":", 1) for line in lines)}


def _listed(name: str) -> list[str]:
    text = resources.files("jobs.declare").joinpath(name).read_text()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def _path(column: exp.Column) -> str:
    """A column's path, with any fields of it taken after (`a.b.c.d.e`)."""
    parts, node = [part.name for part in column.parts], column
    while isinstance(node.parent, exp.Dot) and node.parent.this is node:
        node = node.parent
        parts.append(node.expression.name)
    return ".".join(parts)
