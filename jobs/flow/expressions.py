"""A declaration's computed columns and `where` (jobs/declare/expressions.py) on the parsed
events, in the query:

    columns   added in order, each over the source's fields, the enrichment's columns and
              the columns computed before it
    where     `_jobs_kept`, whether a usable record is kept; one it is not true for is counted
              as filtered (jobs/flow/tally.py) and stays usable up to the pattern, which drops
              it right after the watermark (`kept_only`): the watermark follows every usable
              event of the source, filtered or not, so a changed `where` moves it no differently

Analysed by Spark with ANSI mode off, as the rules are (jobs/flow/rules.py), so that no value
can make one raise (a batch that failed on a value would fail again on every rerun): a text
that does not convert, or a division by zero, gives null. An expression Spark cannot analyse
over the events is refused (DeclarationError, naming the column) before anything runs.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from jobs.columns import KEPT, QUARANTINE_REASON
from jobs.declare.computing import Computes
from jobs.declare.load import DeclarationError
from jobs.flow.rules import ansi_off


def with_computed(events: DataFrame, computed: Computes) -> DataFrame:
    """`events` with each computed column added, in order, and `_jobs_kept` when there is a
    `where` (null for a quarantined record)."""
    with ansi_off(events.sparkSession):
        for name, expression in computed.columns.items():
            events = events.withColumn(name, _analysed(events, expression, f"column {name!r}"))
        if computed.where:
            where = _analysed(events, computed.where, "where")
            kind = events.select(where.alias("where")).schema["where"].dataType
            if not isinstance(kind, BooleanType):
                raise DeclarationError(
                    f"where {computed.where!r} gives {kind.simpleString()} values, not true or false"
                )
            events = events.withColumn(KEPT, F.when(F.col(QUARANTINE_REASON).isNull(), where))
    return events


def filtered(events: DataFrame) -> Column | None:
    """Whether `where` filters a record (None: the events have no `where`)."""
    return ~F.coalesce(F.col(KEPT), F.lit(False)) if KEPT in events.columns else None


def kept_only(events: DataFrame, time_column: str) -> DataFrame:
    """The events `where` keeps, once the watermark (on `time_column`) has seen them all. A
    filter on `_jobs_kept` alone would be moved below the watermark by Spark's optimizer, which
    pushes down every predicate that does not read the event time: this one reads it."""
    if KEPT not in events.columns:
        return events
    return events.where(F.coalesce(F.col(KEPT), F.col(time_column).isNull())).drop(KEPT)


def _analysed(events: DataFrame, expression: str, what: str) -> Column:
    """The expression, refused (naming `what`) when Spark cannot analyse it over the events."""
    column = F.expr(expression)
    try:
        events.select(column.alias("analysed")).schema  # noqa: B018 - analysed here, to refuse early
    except (AnalysisException, ParseException) as error:
        first = str(error).strip().splitlines()[0]
        raise DeclarationError(f"{what}: Spark cannot evaluate {expression!r}: {first}") from None
    return column
