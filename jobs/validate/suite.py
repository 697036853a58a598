"""Expectation suites as data: what a suite file (expectations/<table>.yaml) may say.

Loading a suite needs neither Spark nor Great Expectations: a broken suite (an expectation
Great Expectations does not have, an argument it does not take: gx_expectations.json) is
caught by `python -m jobs list`, the DAG files and a run's start, not half-way through a run. Suites ship with
the package (the `expectations` folder, found as package data); JOBS_EXPECTATIONS_DIR
points at another folder of them.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from jobs.declare import DeclarationError, PipelineBase
from jobs.declare.load import Declarations, describe_each, read_yaml
from jobs.declare.parts import Part
from jobs.declare.problems import did_you_mean, refuse
from jobs.flow.patterns import pattern_of
from jobs.settings import settings

# Columns the validation adds to a windowed table before Great Expectations sees it.
DERIVED_COLUMNS = ("window_length_s",)


def expectations_dir() -> Traversable:
    return settings().expectations_dir or resources.files("expectations")


# Great Expectations' expectations and their arguments, written from its registry by
# infra/gx_registry.py (tests/unit/test_suite.py keeps it true): a suite is checked against
# it when it loads, without importing Great Expectations.
GX_EXPECTATIONS = resources.files("jobs.validate").joinpath("gx_expectations.json")
OUR_KEYS = ("expect", "severity", "when")  # a suite's own settings of an expectation


def gx_class_name(expect: str) -> str:
    """column_values_to_not_be_null -> ExpectColumnValuesToNotBeNull (gx.expectations')."""
    return "Expect" + "".join(part.capitalize() for part in expect.split("_"))


@cache
def gx_expectations() -> dict[str, dict[str, list[str]]]:
    return json.loads(GX_EXPECTATIONS.read_text())


def _known(expect: str, given: set[str]) -> None:
    """An expectation Great Expectations has, with the arguments it takes (ValueError: what is
    wrong, with the name it is spelt like)."""
    known = gx_expectations()
    if expect not in known:
        raise ValueError(f"expect {expect!r}: Great Expectations has no such expectation{did_you_mean(expect, known)}")
    takes = {*known[expect]["required"], *known[expect]["optional"]}
    unknown = sorted(given - takes)
    if unknown:
        close = did_you_mean(unknown[0], takes)
        raise ValueError(
            f"expect {expect!r} takes no {', '.join(unknown)}{close} (it takes {', '.join(sorted(takes))})"
        )
    missing = sorted(set(known[expect]["required"]) - given)
    if missing:
        raise ValueError(f"expect {expect!r} needs {', '.join(missing)}")


class Expectation(Part):
    """One Great Expectations expectation (its name without `expect_`, e.g.
    column_values_to_not_be_null), its arguments, our severity and condition."""

    model_config = ConfigDict(extra="allow", frozen=True)

    expect: str
    severity: str = "fail"  # fail: the validation fails; warn: reported only
    # run_had_input: only when the run used rows its table should show by now (validation.rows_to_show)
    when: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, raw: Any, info: ValidationInfo) -> Any:
        if not isinstance(raw, dict) or not isinstance(raw.get("expect"), str):
            raise ValueError("needs 'expect', e.g. expect: column_values_to_not_be_null")
        if raw.get("severity", "fail") not in ("fail", "warn"):
            raise ValueError(f"severity {raw['severity']!r}: use one of fail, warn")
        if raw.get("when") not in (None, "run_had_input"):
            raise ValueError(f"when {raw['when']!r}: use one of run_had_input")
        declared = (info.context or {}).get("declared", {})
        resolved = {"expect": raw["expect"].removeprefix("expect_")}
        _known(resolved["expect"], {key for key in raw if key not in OUR_KEYS})
        for key, value in raw.items():
            if isinstance(value, str) and value.startswith("$") and key not in ("expect", "severity", "when"):
                if value not in declared:
                    raise ValueError(f"{value} is not a declared value; use one of {', '.join(declared) or 'none'}")
                value = declared[value]
            resolved.setdefault(key, value)
        return resolved

    @model_validator(mode="after")
    def _columns_exist(self, info: ValidationInfo) -> Expectation:
        if "column_list" in self.kwargs and len(self.columns) < 2:
            raise ValueError("column_list needs two or more columns; for one, use column: and a column_ expectation")
        columns = (info.context or {}).get("columns")
        missing = [c for c in self.columns if columns is not None and c not in columns]
        table = (info.context or {}).get("table")
        listed = ", ".join(sorted(columns or ()))
        refuse([f"column {c!r} is not in table {table} ({listed}){did_you_mean(c, columns)}" for c in missing])
        return self

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def columns(self) -> list[str]:
        kwargs = self.kwargs
        if "column" in kwargs:
            return [kwargs["column"]]
        if "column_A" in kwargs:
            return [kwargs["column_A"], kwargs.get("column_B")]
        return list(kwargs.get("column_list", []))

    @property
    def check_name(self) -> str:
        return f"{self.expect} ({', '.join(self.columns) or 'table'})"


class RowsBalance(Part):
    """input = used + quarantined + filtered + late + duplicates, from the run reports."""

    severity: Literal["fail", "warn"] = "fail"


class QuarantineShare(Part):
    """At most `max` of the input rows quarantined, from the run reports: over it, the check
    says its severity; over `fail_above` (a share no healthy run comes near: a type declared
    wrong, a producer broken), it fails whatever its severity."""

    severity: Literal["fail", "warn"] = "warn"
    max_value: float = Field(alias="max")
    fail_above: float | None = None

    @field_validator("max_value", "fail_above", mode="before")
    @classmethod
    def _share(cls, value: Any, info: ValidationInfo) -> Any:
        name = "max" if info.field_name == "max_value" else info.field_name
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1:
            raise ValueError(f"needs {name}, a share between 0 and 1 (e.g. {name}: {0.05 if name == 'max' else 0.5})")
        return value

    @model_validator(mode="after")
    def _fail_above_max(self) -> QuarantineShare:
        if self.fail_above is not None and self.fail_above < self.max_value:
            raise ValueError(f"fail_above {self.fail_above} is under max {self.max_value}: it is the higher share")
        return self


class RunChecks(Part):
    """Checks on the run reports, which Great Expectations cannot see in the table."""

    rows_balance: RowsBalance | None = None
    quarantine_share: QuarantineShare | None = None


class Suite(Part):
    table: str
    expectations: tuple[Expectation, ...] = ()
    run_checks: RunChecks = RunChecks()
    # Whether results keep a few unexpected values as examples (GX's samples, shown in the
    # Data Docs and the report); `samples: false` keeps counts only, for personal data.
    samples: bool = True

    @model_validator(mode="before")
    @classmethod
    def _for_this_table(cls, raw: Any, info: ValidationInfo) -> Any:
        table = (info.context or {}).get("table")
        if isinstance(raw, dict) and table and raw.get("table") != table:
            raise ValueError(f"table {raw.get('table')!r} does not match the pipeline {table!r}")
        return raw

    @model_validator(mode="after")
    def _each_check_once(self) -> Suite:
        names = [e.check_name for e in self.expectations]
        repeated = sorted({n for n in names if names.count(n) > 1})
        refuse([f"{name} is declared twice; merge the two" for name in repeated])
        return self


def parse_suite(raw: Any, pipeline: PipelineBase, where: str = "suite") -> Suite:
    """Check a suite against the pipeline it describes, resolving `$` references."""
    pattern = pattern_of(pipeline)
    columns = {*pattern.output_columns(), *(DERIVED_COLUMNS if "window_end" in pattern.output_columns() else ())}
    if pipeline.output.partition_by:
        columns.add(pipeline.output.partition_by)
    known = pattern.columns_known()  # else a transform's columns: the validation finds them in the table
    context = {"table": pipeline.name, "columns": columns if known else None, "declared": pattern.suite_values()}
    if not isinstance(raw, dict):
        raise DeclarationError(f"{where}: expected a mapping with 'table' and 'expectations'")
    try:
        return Suite.model_validate(raw, context=context)
    except ValidationError as error:
        problems = describe_each(error.errors(), where, Suite, raw)
        raise DeclarationError("; ".join(problems), problems) from None


def load_suite(pipeline: PipelineBase, directory: Traversable | None = None) -> Suite:
    path = (directory or expectations_dir()) / f"{pipeline.name}.yaml"
    if not path.is_file():
        elsewhere = (
            "" if settings().expectations_dir else " (suites of your own: a folder named by JOBS_EXPECTATIONS_DIR)"
        )
        raise DeclarationError(f"no expectation suite for {pipeline.name}: every output table needs {path}{elsewhere}")
    return parse_suite(read_yaml(path.read_text(), str(path)), pipeline, str(path))


def with_suites(declared: Declarations) -> Declarations:
    """The declarations whose table has a suite that loads; a pipeline without one, or with a
    broken one, among the broken (its DAG says why; `dags/jobs_declarations.py` fails to import)."""
    checked = Declarations(broken=dict(declared.broken), problems=list(declared.problems))
    for name, pipeline in declared.pipelines.items():
        try:
            load_suite(pipeline)
        except DeclarationError as error:
            checked.broken[name] = str(error)
            checked.problems.extend(error.problems or [str(error)])
        else:
            checked.pipelines[name] = pipeline
    return checked
