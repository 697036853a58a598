"""How each pipeline is doing, at a glance: the overview of the data quality report.

A pipeline is, worst first:
    failing    its last run failed, or its latest validation failed a `fail` check, or its
               latest run with input used none of it (every row quarantined: quality failed)
    not validated  a run committed rows that no validation has checked (a validation that did
               not finish, `--no-validate`): the next run, or `validate`, checks them
    late       its table's newest rows are older than its freshness: no run appended rows
               for longer than it may go (jobs/history/freshness.py)
    warning    its last run was refused or stopped, or its latest validation warned, or its
               runs show a watermark ahead of now or most rows dropped as late
               (jobs/run/warnings.py), or its latest run with input has anomalies: a metric
               outside what its history expects (jobs/history/anomalies.py)
    healthy    none of the above
    never run  no run report yet
From the run reports and validation results only: no Spark.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from jobs.history import freshness
from jobs.history.freshness import Freshness, schedule_interval_s
from jobs.run.report import RunReport, RunStatus
from jobs.run.warnings import run_warnings
from jobs.units import duration
from jobs.validate.result import ValidationResult, unvalidated

STATUSES = ("failing", "not validated", "late", "warning", "healthy", "never run")  # worst first: the overview's order
HISTORICAL_S = 7 * 86400  # a watermark further behind now is shown as a date, not as a lag


@dataclass(frozen=True)
class Health:
    pipeline: str
    status: str  # one of STATUSES
    reason: str  # why, in a few words
    last_run: RunReport | None
    age_s: float | None  # since the last run started
    interval_s: float | None  # the schedule's
    verdict: str | None  # the latest validation's: passed, warned, failed; None: never validated
    watermark_lag_s: float | None  # how far event time (the watermark) is behind now
    rows_24h: int  # input rows of the runs started in the last 24 hours
    quarantined_24h: int
    # Each rule a row of those runs broke: (rule, its action, rows that broke it), most first.
    rules_24h: tuple[tuple[str, str | None, int], ...] = ()
    watermark: str | None = None  # the latest run's
    freshness: Freshness | None = None  # its table's newest rows' age, against its freshness

    @property
    def watermark_shown(self) -> str:
        """The watermark's lag behind now; for event time long past (historical data,
        a replay), the watermark itself: a lag of years says nothing."""
        if self.watermark_lag_s is None or self.watermark is None:
            return "-"
        if self.watermark_lag_s > HISTORICAL_S:
            return "at " + self.watermark[:16].replace("T", " ") + " UTC"
        return duration(self.watermark_lag_s)

    @property
    def quarantine_share(self) -> float | None:
        return self.quarantined_24h / self.rows_24h if self.rows_24h else None

    @property
    def rule_shares(self) -> list[str]:
        """'known_event 1.2% (quarantine)' for each rule broken in the last 24 hours."""
        return [
            f"{name} {100 * n / self.rows_24h:.1f}% ({action or 'no longer declared'})"
            for name, action, n in self.rules_24h
            if self.rows_24h
        ]

    @property
    def rank(self) -> int:
        return STATUSES.index(self.status)


def assess(
    name: str,
    schedule: str | None,
    runs: list[RunReport],
    results: list[ValidationResult],
    now: datetime,
    at_least_every_s: float | None = None,  # on arrival: the declared clock
    freshness_s: float | None = None,  # the declared `freshness` (None: from the schedule)
) -> Health:
    interval = schedule_interval_s(schedule, at_least_every_s)
    fresh = freshness.of_reports(name, freshness.limit_s(freshness_s, interval), runs, now)
    if not runs:
        return Health(name, "never run", "no run yet", None, None, interval, None, None, 0, 0, freshness=fresh)
    last = max(runs, key=lambda r: r.started_at)
    age = (now - datetime.fromisoformat(last.started_at)).total_seconds()
    latest = max(results, key=lambda r: r.validated_at) if results else None
    verdict = latest.status if latest else None
    watermarks = [r.watermark for r in sorted(runs, key=lambda r: r.started_at) if r.watermark]
    lag = (now - datetime.fromisoformat(watermarks[-1].replace("Z", "+00:00"))).total_seconds() if watermarks else None
    recent = [r for r in runs if datetime.fromisoformat(r.started_at) >= now - timedelta(hours=24)]
    rows, quarantined = sum(r.input_rows for r in recent), sum(r.quarantined_rows for r in recent)
    status, reason = _status(runs, results, last, latest, now, fresh)
    watermark = watermarks[-1] if watermarks else None
    rules = _broken_rules(recent)
    return Health(name, status, reason, last, age, interval, verdict, lag, rows, quarantined, rules, watermark, fresh)


def _status(
    runs: list[RunReport],
    results: list[ValidationResult],
    last: RunReport,
    latest: ValidationResult | None,
    now: datetime,
    fresh: Freshness,
) -> tuple[str, str]:
    """The pipeline's status and why: the first of these that holds, the worst first."""
    verdict = latest.status if latest else None
    with_input = [r for r in runs if r.input_rows and r.status == RunStatus.SUCCEEDED]
    last_input = max(with_input, key=lambda r: r.started_at) if with_input else None
    unchecked = unvalidated(runs, results)
    if last.status == RunStatus.FAILED:
        return "failing", f"the last run failed: {last.error or 'see its report'}"
    if last_input is not None and last_input.used_none:  # its share check fails too: this says more
        return "failing", f"quality failed: run {last_input.run_id} {last_input.used_none_said()}"
    if last.status == RunStatus.SUCCEEDED and last.owed:  # its table is stale where its upstream rewrote rows
        return "failing", f"owes what its upstream rewrote: {'; '.join(last.owed)}"
    if verdict == "failed":
        return "failing", f"the latest validation ({latest.validation_id}) failed"
    if unchecked:
        written = sum(r.output_rows or 0 for r in unchecked)
        failed = next((r for r in reversed(unchecked) if r.not_validated), None)
        why = f" (run {failed.run_id}'s validation did not finish: {failed.not_validated})" if failed else ""
        return "not validated", (
            f"{len(unchecked)} run(s) committed rows no validation has checked ({written} output rows, run "
            f"{unchecked[-1].run_id} the last): the next run, or python -m jobs validate, checks them{why}"
        )
    if fresh.late:
        return "late", fresh.describe()
    if last.status in (RunStatus.REFUSED, RunStatus.STOPPED):
        return "warning", f"the last run was {last.status}" + (f": {last.error}" if last.error else "")
    if verdict == "warned":
        return "warning", f"the latest validation ({latest.validation_id}) warned"
    ordered = sorted(runs, key=lambda r: r.started_at)
    if warnings := run_warnings(ordered, now):
        return "warning", "; ".join(warnings)
    if anomalous := next((r.anomalies for r in reversed(ordered) if r.input_rows), None):
        return "warning", "; ".join(anomaly.describe() for anomaly in anomalous)
    return "healthy", "the last run succeeded" + (f", validation {verdict}" if verdict else "")


def _broken_rules(runs: list[RunReport]) -> tuple[tuple[str, str | None, int], ...]:
    """(rule, its latest action, rows that broke it) over these runs, most broken first."""
    violations: Counter[str] = Counter()
    actions: dict[str, str | None] = {}
    for run in sorted(runs, key=lambda r: r.started_at):
        for rule, count in run.rules.items():
            violations[rule] += count.violations
            actions[rule] = count.action or actions.get(rule)
    ordered = sorted(violations.items(), key=lambda item: (-item[1], item[0]))
    return tuple((rule, actions[rule], n) for rule, n in ordered if n)
