"""Checks on run reports, which Great Expectations cannot see in the table: the rows
balance, and the share of input rows quarantined."""

from __future__ import annotations

from jobs.lake.layout import join
from jobs.run.report import RunReport
from jobs.validate.result import CheckResult
from jobs.validate.suite import QuarantineShare, RowsBalance, Suite


def run_report_checks(suite: Suite, reports: list[RunReport]) -> list[CheckResult]:
    """The suite's run checks over the reports' rows, summed. An unknown count of
    duplicates (None) is checked as zero."""
    checks = suite.run_checks
    results = []
    if checks.rows_balance is not None:
        results.append(_rows_balance(checks.rows_balance, reports))
    if checks.quarantine_share is not None:
        results.append(_quarantine_share(checks.quarantine_share, reports))
    return results


def _rows_balance(check: RowsBalance, reports: list[RunReport]) -> CheckResult:
    input_rows = sum(r.input_rows for r in reports)
    used = sum(r.used_rows for r in reports)
    quarantined = sum(r.quarantined_rows for r in reports)
    filtered = sum(r.filtered_rows for r in reports)
    late = sum(r.late_rows_dropped for r in reports)
    duplicates = sum(r.duplicates_dropped or 0 for r in reports)
    accounted = used + quarantined + filtered + late + duplicates
    parts = (
        f"used {used} + quarantined {quarantined}"
        + (f" + filtered {filtered}" if filtered else "")
        + f" + late {late}"
        + (f" + duplicates {duplicates}" if duplicates else "")
    )
    balanced = input_rows == accounted
    return CheckResult(
        name="rows_balance (run report)",
        source="run_report",
        severity=check.severity,
        success=balanced,
        message=(
            f"input rows {input_rows} = {parts}"
            if balanced
            else f"input rows {input_rows} != {parts} = {accounted}: {abs(input_rows - accounted)} rows unaccounted for"
        ),
        observed={"input_rows": input_rows, "accounted_rows": accounted},
    )


def _quarantine_share(check: QuarantineShare, reports: list[RunReport]) -> CheckResult:
    input_rows = sum(r.input_rows for r in reports)
    quarantined = sum(r.quarantined_rows for r in reports)
    share = quarantined / input_rows if input_rows else 0.0
    passed = share <= check.max_value
    failing = check.fail_above is not None and share > check.fail_above
    limit = f"over {check.fail_above:.1%}, which fails" if failing else f"at most {check.max_value:.1%}"
    message = f"{quarantined} of {input_rows} input rows quarantined ({share:.1%}, {limit})"
    if not passed:
        message += top_reason(reports)
    return CheckResult(
        name="quarantine_share (run report)",
        source="run_report",
        severity="fail" if failing else check.severity,
        success=passed,
        message=message,
        unexpected_count=quarantined,
        element_count=input_rows,
        observed=round(share, 4),
    )


def top_reason(reports: list[RunReport]) -> str:
    """The reason most of the quarantined rows share, with what to look at: what a user whose
    run quarantined a quarter of its rows needs first (a wrong type, a rule)."""
    reasons: dict[str, int] = {}
    latest: dict[str, tuple[str, int]] = {}
    for report in reports:
        for reason, counted in (report.quarantine_reasons or {}).items():
            reasons[reason] = reasons.get(reason, 0) + counted.rows
            latest[reason] = (report.locations.get("quarantine", ""), counted.last_batch)
    if not reasons:
        return ""
    top, rows = max(reasons.items(), key=lambda item: (item[1], item[0]))
    folder, batch = latest[top]
    records = f": the records are in {join(folder, f'batch_id={batch}')}" if folder else ""
    return f"; most for {top} ({rows} rows){records}"
