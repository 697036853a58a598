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

from typing import Literal

from pydantic import field_validator, model_validator

from jobs.declare.expressions import paths_read
from jobs.declare.parts import Part
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


def fields_read(check: str) -> tuple[str, ...]:
    """The paths a check reads; refused (ValueError) when it is not one Spark SQL expression
    over a record (jobs/declare/expressions.py)."""
    return paths_read(check, f"check {check!r}")


def rule_problems(rules: tuple[Rule, ...]) -> list[str]:
    """What the rules say of each other (each rule checks its own expression): names are
    unique, and not more than MAX_RULES."""
    problems = [f"{len(rules)} rules; a pipeline has at most {MAX_RULES}"] if len(rules) > MAX_RULES else []
    names = [rule.name for rule in rules]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"rule names {repeated} are used more than once; a rule's name is its count's name")
    return problems
