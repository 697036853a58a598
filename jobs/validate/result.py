"""Validation results: each check's outcome, the verdict, and where they are stored
(<runs>/<validation_id>.quality.json, beside the run reports)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pydantic import BaseModel, Field

from jobs.history import rows
from jobs.lake import fs
from jobs.lake.layout import join
from jobs.run.report import RESULTS_SUFFIX, RunReport, RunStatus


class CheckResult(BaseModel):
    name: str
    source: str  # great_expectations or run_report
    severity: str  # fail or warn
    success: bool | None  # None: skipped, its condition did not hold
    message: str
    unexpected_count: int | None = None
    element_count: int | None = None
    observed: Any = None
    examples: list[Any] = Field(default_factory=list)


class ValidationResult(BaseModel):
    pipeline: str
    scope: str  # run: the files one run committed; table: the whole table
    validation_id: str  # the run id, or table-<time>
    run_ids: list[str]
    validated_at: str
    status: str = "passed"  # passed, warned (a warn check failed) or failed (a fail check failed)
    duration_s: float = 0.0
    files_validated: int = 0
    rows_validated: int = 0
    engine: str | None = None  # pandas (a small output, no Spark job) or spark; None: no batch to read
    checks: list[CheckResult] = Field(default_factory=list)
    data_docs_page: str | None = None  # relative to <reports>/data_docs

    def decide(self) -> None:
        failed = [c for c in self.checks if c.success is False]
        if any(c.severity == "fail" for c in failed):
            self.status = "failed"
        elif failed:
            self.status = "warned"
        else:
            self.status = "passed"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    def summary(self) -> str:
        what = f"run {self.run_ids[0]}" if self.scope == "run" else f"the whole table ({len(self.run_ids)} runs)"
        if self.scope == "run" and len(self.run_ids) > 1:
            what += f" and of {len(self.run_ids) - 1} earlier run(s) whose rows were not validated"
        passed = sum(1 for c in self.checks if c.success)
        ran = sum(1 for c in self.checks if c.success is not None)
        if all(c.success is None for c in self.checks if c.source == "great_expectations"):
            scope = "no batch ran: only the run report was checked"
        else:
            scope = f"{self.rows_validated} rows in {self.files_validated} files ({self.engine})"
        lines = [
            f"{self.pipeline} validation of {what}: {self.status.upper()} "
            f"({passed}/{ran} checks passed, {scope}, {self.duration_s}s)"
        ]
        lines += [f"  {c.severity.upper()} {c.name}: {c.message}" for c in self.checks if c.success is False]
        return "\n".join(lines)


def result_uri(runs: str, validation_id: str) -> str:
    return join(runs, f"{validation_id}{RESULTS_SUFFIX}")


def save_result(result: ValidationResult, runs: str) -> str:
    uri = result_uri(runs, result.validation_id)
    fs.write_json(uri, result.to_dict())
    return uri


def load_results(runs: str) -> list[ValidationResult]:
    """Every stored validation result of a pipeline, oldest first."""
    names = [n for n in fs.list_names(runs) if n.endswith(RESULTS_SUFFIX)]
    found = [ValidationResult.model_validate(fs.read_json(join(runs, name))) for name in names]
    return sorted(found, key=lambda result: result.validated_at)


def appended_since(check: ValidationResult, reports: list[RunReport]) -> list[RunReport]:
    """The runs that appended rows to the table after a whole-table check read it: those
    not among the runs it covered (runs that appended none change nothing)."""
    from jobs.history.freshness import appended

    covered = set(check.run_ids)
    return [r for r in reports if appended(r) and r.run_id not in covered]


def current_table_check(reports: list[RunReport], results: list[ValidationResult]) -> str | None:
    """The id of the table's last whole-table check if no run has appended rows since it;
    None when the table needs a check."""
    checks = [r for r in results if r.scope == "table"]
    return checks[-1].validation_id if checks and not appended_since(checks[-1], reports) else None


def unvalidated(runs: list[RunReport], results: list[ValidationResult]) -> list[RunReport]:
    """The runs, oldest first, that committed batches no validation has checked (a validation of
    a run names it; one of the whole table names every run it covered)."""
    checked = {run_id for result in results for run_id in result.run_ids}
    return sorted(
        (
            r
            for r in runs
            if r.batch_ids and r.status in (RunStatus.SUCCEEDED, RunStatus.STOPPED) and r.run_id not in checked
        ),
        key=lambda r: r.started_at,
    )


def history_row(result: ValidationResult) -> pa.Table:
    """A validation's row of `runs`: its verdict and what it checked."""
    checked = [c.success for c in result.checks]
    row = {
        "schema_version": rows.SCHEMA_VERSION,
        "pipeline": result.pipeline,
        "record": "validation",
        "run_id": result.run_ids[-1] if result.run_ids else None,
        "started_at": rows.time_of(result.validated_at),
        "duration_s": result.duration_s,
        "status": result.status,
        "validation_id": result.validation_id,
        "validation_scope": result.scope,
        "validated_runs": list(result.run_ids),
        "validated_rows": result.rows_validated,
        "checks_passed": checked.count(True),
        "checks_failed": checked.count(False),
        "checks_skipped": checked.count(None),
    }
    return pa.Table.from_pylist([row], schema=rows.RUNS)
