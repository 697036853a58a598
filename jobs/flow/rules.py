"""Row rules (jobs/declare/rules.py) on parsed records, inside the query, in the same pass:

    each usable record is tested against every rule it is on; the rules it breaks travel
    as the bits of `_rules_broken` to the tally (jobs/flow/tally.py), which counts each
    rule's violations per landed file; the first `quarantine` rule it breaks becomes its
    quarantine reason (rule:<name>); a `fail` rule it breaks fails the batch, naming the
    rule, the file and the line, before anything of the batch is committed.

A check is analysed by Spark with ANSI mode off, so that no value can make it raise (a
batch that failed on a value would fail again on every rerun): a text that does not
convert, or a division by zero, gives null, and a null check breaks nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from jobs.columns import BLOCK_START, BROKEN, LINE_NUMBER, QUARANTINE_DETAIL, QUARANTINE_REASON, SOURCE_FILE
from jobs.declare.load import DeclarationError
from jobs.declare.rules import RULE_FAILED, Rule
from jobs.flow.fields import field


@contextlib.contextmanager
def ansi_off(spark: SparkSession) -> Iterator[None]:
    """Expressions analysed inside keep the non-ANSI evaluation (null, never an error)."""
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)


def _values(rule: Rule) -> Column:
    """The values a record had in the fields a check reads, as JSON ({"event":"clik"})."""
    return F.to_json(F.struct(*(field(path).alias(path) for path in rule.fields)))


def _where(events: DataFrame) -> Column:
    """Where a record is: its file and line (in the part of the file Spark read, when that
    part does not start the file: jobs/accounting/lines.py)."""
    line = [F.col(SOURCE_FILE), F.lit(" line "), F.col(LINE_NUMBER).cast("string")]
    if BLOCK_START in events.columns:
        start = F.col(BLOCK_START).cast("string")
        line.append(F.when(F.col(BLOCK_START) > 0, F.concat(F.lit(" of the part from byte "), start)).otherwise(""))
    return F.concat(*line)


def checked(events: DataFrame, rules: tuple[Rule, ...]) -> DataFrame:
    """Parsed events (with their quarantine reason and detail) -> the same with `_rules_broken`,
    and the reason and detail of the records a rule quarantines; a record a `fail` rule
    rejects fails the batch. A rule Spark cannot analyse over the events is refused
    (DeclarationError) before anything runs."""
    usable = F.col(QUARANTINE_REASON).isNull()
    spark = events.sparkSession
    names = [f"_rule_{i}" for i in range(len(rules))]
    with ansi_off(spark):
        for rule in rules:
            _refuse_unless_boolean(events, rule)
        # The tests first, in a projection of their own: the mask, the reason and the
        # detail each read them (an expression repeated would be evaluated again).
        tests = [F.coalesce(usable & ~F.expr(rule.check), F.lit(False)) for rule in rules]
        tested = events.select("*", *(test.alias(name) for test, name in zip(tests, names, strict=True)))
    broken = [F.col(n) for n in names]
    mask = sum((F.when(b, F.lit(1 << i)).otherwise(F.lit(0)) for i, b in enumerate(broken)), F.lit(0)).cast("long")
    reason, detail = F.when(~usable, F.col(QUARANTINE_REASON)), F.when(~usable, F.col(QUARANTINE_DETAIL))
    where = _where(events)
    for rule, is_broken in zip(rules, broken, strict=True):
        if rule.on_violation == "fail":
            says = F.lit(f": {rule.check} is false for ")
            message = F.concat(F.lit(f"{RULE_FAILED} '{rule.name}' (on_violation: fail): "), where, says, _values(rule))
            reason = reason.when(is_broken, F.raise_error(message).cast("string"))
    for rule, is_broken in zip(rules, broken, strict=True):
        if rule.on_violation == "quarantine":
            reason = reason.when(is_broken, F.lit(rule.reason))
            detail = detail.when(is_broken, F.concat(F.lit(f"{rule.check} is false for "), _values(rule)))
    kept = [c for c in events.columns if c not in (QUARANTINE_REASON, QUARANTINE_DETAIL)]
    return tested.select(*kept, mask.alias(BROKEN), reason.alias(QUARANTINE_REASON), detail.alias(QUARANTINE_DETAIL))


def _refuse_unless_boolean(events: DataFrame, rule: Rule) -> None:
    try:
        kind = events.select(F.expr(rule.check).alias("check")).schema["check"].dataType
    except (AnalysisException, ParseException) as error:
        first = str(error).strip().splitlines()[0]
        raise DeclarationError(f"rule {rule.name!r}: Spark cannot evaluate {rule.check!r}: {first}") from None
    if not isinstance(kind, BooleanType):
        raise DeclarationError(f"rule {rule.name!r}: {rule.check!r} is a {kind.simpleString()}, not true or false")
