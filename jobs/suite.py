"""Expectation suites as data: what a suite file (expectations/<table>.yaml) may say.

Loading a suite needs neither Spark nor Great Expectations: a broken suite is caught by
`python -m jobs list` and the unit tests, not half-way through a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from jobs.spec import PipelineSpec, SpecError

EXPECTATIONS_DIR = Path(__file__).resolve().parent.parent / "expectations"
SEVERITIES = ("fail", "warn")
CONDITIONS = ("run_had_input",)
# Columns the validation adds to the table before Great Expectations sees it.
DERIVED_COLUMNS = ("window_length_s",)


def declared_values(spec: PipelineSpec) -> dict[str, Any]:
    """What `$name` stands for in a suite: values from the pipeline's declaration."""
    if spec.window is None:
        return {}
    return {
        "$window_s": spec.window.duration_s,
        "$slide_s": spec.window.slide_s,
        "$keys": list(spec.keys),
        "$table_key": ["window_start", *spec.keys],
    }


@dataclass(frozen=True)
class Expectation:
    """One Great Expectations expectation, with our severity and condition."""

    expect: str  # the expectation's name without `expect_`, e.g. column_values_to_not_be_null
    kwargs: dict[str, Any]
    severity: str
    when: str | None = None

    @property
    def columns(self) -> list[str]:
        if "column" in self.kwargs:
            return [self.kwargs["column"]]
        if "column_A" in self.kwargs:
            return [self.kwargs["column_A"], self.kwargs.get("column_B")]
        return list(self.kwargs.get("column_list", []))

    @property
    def check_name(self) -> str:
        subject = ", ".join(self.columns) or "table"
        return f"{self.expect} ({subject})"


@dataclass(frozen=True)
class RunCheck:
    """A check on the run report, which Great Expectations cannot see in the table."""

    name: str  # rows_balance or quarantine_share
    severity: str
    max_value: float | None = None


@dataclass(frozen=True)
class Suite:
    table: str
    expectations: tuple[Expectation, ...]
    run_checks: tuple[RunCheck, ...]


def _severity(raw: dict, where: str) -> str:
    severity = raw.get("severity", "fail")
    if severity not in SEVERITIES:
        raise SpecError(f"{where}: severity {severity!r}: use one of {', '.join(SEVERITIES)}")
    return severity


def _resolve(value: Any, declared: dict[str, Any], where: str) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        if value not in declared:
            raise SpecError(f"{where}: {value} is not a declared value; use one of {', '.join(declared) or 'none'}")
        return declared[value]
    return value


def parse_suite(raw: Any, spec: PipelineSpec, where: str = "suite") -> Suite:
    """Check a suite against the pipeline it describes, resolving `$` references."""
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: expected a mapping with 'table' and 'expectations'")
    unknown = set(raw) - {"table", "expectations", "run_checks"}
    if unknown:
        raise SpecError(f"{where}: unknown keys {sorted(unknown)}; allowed: table, expectations, run_checks")
    if raw.get("table") != spec.name:
        raise SpecError(f"{where}: table {raw.get('table')!r} does not match the pipeline {spec.name!r}")
    declared = declared_values(spec)
    columns = {*spec.output_columns, *(DERIVED_COLUMNS if spec.window else ())}
    if spec.output.partition_by:
        columns.add(spec.output.partition_by)

    expectations = []
    for number, entry in enumerate(raw.get("expectations") or [], start=1):
        at = f"{where}: expectation {number}"
        if not isinstance(entry, dict) or not isinstance(entry.get("expect"), str):
            raise SpecError(f"{at}: needs 'expect', e.g. expect: column_values_to_not_be_null")
        when = entry.get("when")
        if when is not None and when not in CONDITIONS:
            raise SpecError(f"{at}: when {when!r}: use one of {', '.join(CONDITIONS)}")
        kwargs = {
            key: _resolve(value, declared, at)
            for key, value in entry.items()
            if key not in ("expect", "severity", "when")
        }
        expectation = Expectation(entry["expect"].removeprefix("expect_"), kwargs, _severity(entry, at), when)
        if "column_list" in expectation.kwargs and len(expectation.columns) < 2:
            raise SpecError(
                f"{at}: column_list needs two or more columns; for one, use column: and a column_ expectation"
            )
        missing = [c for c in expectation.columns if c not in columns]
        if missing:
            raise SpecError(f"{at}: column {missing[0]!r} is not in table {spec.name} ({', '.join(sorted(columns))})")
        expectations.append(expectation)
    names = [e.check_name for e in expectations]
    repeated = {n for n in names if names.count(n) > 1}
    if repeated:
        raise SpecError(f"{where}: {sorted(repeated)[0]} is declared twice; merge the two")

    run_checks = []
    for name, entry in (raw.get("run_checks") or {}).items():
        at = f"{where}: run_checks.{name}"
        entry = entry or {}
        if name == "rows_balance":
            run_checks.append(RunCheck(name, _severity(entry, at)))
        elif name == "quarantine_share":
            max_value = entry.get("max")
            if not isinstance(max_value, int | float) or not 0 <= max_value <= 1:
                raise SpecError(f"{at}: needs max, a share between 0 and 1 (e.g. max: 0.05)")
            run_checks.append(RunCheck(name, _severity(entry, at), float(max_value)))
        else:
            raise SpecError(f"{at}: unknown check; use rows_balance or quarantine_share")
    return Suite(spec.name, tuple(expectations), tuple(run_checks))


def load_suite(spec: PipelineSpec, directory: Path = EXPECTATIONS_DIR) -> Suite:
    path = directory / f"{spec.name}.yaml"
    if not path.exists():
        raise SpecError(f"no expectation suite for {spec.name}: every output table needs {path}")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise SpecError(f"{path}: not valid YAML: {error}") from None
    return parse_suite(raw, spec, str(path))
