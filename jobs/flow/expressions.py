"""A declaration's computed columns (jobs/declare/expressions.py) on the usable events, in
the query, in order: each over the source's fields, the enrichment's columns and the columns
computed before it.

Analysed by Spark with ANSI mode off, as the rules are (jobs/flow/rules.py), so that no value
can make one raise (a batch that failed on a value would fail again on every rerun): a text
that does not convert, or a division by zero, gives null. An expression Spark cannot analyse
over the events is refused (DeclarationError, naming the column) before anything runs.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.declare.load import DeclarationError
from jobs.flow.rules import ansi_off


def with_computed(events: DataFrame, columns: dict[str, str]) -> DataFrame:
    """`events` with each computed column added, in order."""
    if not columns:
        return events
    with ansi_off(events.sparkSession):
        for name, expression in columns.items():
            try:
                events = events.withColumn(name, F.expr(expression))
            except (AnalysisException, ParseException) as error:
                first = str(error).strip().splitlines()[0]
                raise DeclarationError(f"column {name!r}: Spark cannot evaluate {expression!r}: {first}") from None
    return events
