"""Anomalies: each of a run's metrics against its own history, with nothing declared.

A run is compared with the pipeline's comparable runs (succeeded, with input; the newest
`WINDOW`), once there are `min_runs` of them (the declaration's `quality: {min_runs: 8}`). A
metric's expected range is the median of those runs' values, give or take `SPREAD` robust
deviations (1.4826 times the median absolute deviation: what a normal spread's standard
deviation would be), never narrower than the metric's floor, so that a history that never
moved does not flag the next small wobble. Where the history has a rhythm (the runs at the
same hour of day, or on the same weekday, deviate at most half as much as all of them, and
there are `min_runs` of them), the run is compared with those only.

Counts are judged both ways (input that halves, or doubles); shares, run time and the
watermark's lag only when they rise: a run that quarantines less is no anomaly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

if TYPE_CHECKING:
    from jobs.accounting.accounts import BatchAccount

WINDOW = 400  # the newest comparable runs a run is held against
SPREAD = 4.0  # robust deviations either side of the median
MAD_TO_SIGMA = 1.4826
RHYTHM = 0.5  # a rhythm's runs spread at most this much as all runs do

Direction = Literal["both", "high"]


@dataclass(frozen=True)
class Metric:
    """How a metric is judged: which way, and the least range either side of its median."""

    direction: Direction
    floor: Callable[[float], float]  # the median -> the range's least half-width
    absent: float | None = None  # what a comparable run without it had (None: not known)


ROWS = Metric("both", lambda middle: max(1.0, 0.2 * abs(middle)))  # a fifth of the usual count
SHARE = Metric("high", lambda middle: 0.01)  # a percentage point
REASON = Metric("high", lambda middle: 0.01, absent=0.0)  # a run with input that quarantined none for it
SECONDS = Metric("high", lambda middle: max(30.0, 0.5 * middle))  # half the usual time, or 30 s

# The metrics every run has (docs/history.md), and by prefix those named after a reason or a column.
METRICS = {
    "input_rows": ROWS,
    "used_rows": ROWS,
    "output_rows": ROWS,
    "distinct_keys": ROWS,
    "quarantine_share": SHARE,
    "filtered_share": SHARE,
    "late_share": SHARE,
    "duplicate_share": SHARE,
    "duration_s": SECONDS,
    "watermark_lag_s": SECONDS,
    "quarantine_share:": REASON,
    "null_share:": SHARE,
}


def metrics_of(run: dict) -> dict[str, float]:
    """A run's metrics from its row of the event log's `runs` (a dict): its account as counts
    and shares of its input, its time, its watermark's lag behind its end, and the metrics the
    run measured on its output (the row's `metrics`: null shares)."""
    found: dict[str, float] = {}
    for name in ("input_rows", "used_rows", "output_rows", "duration_s"):
        if run.get(name) is not None:
            found[name] = float(run[name])
    rows = run.get("input_rows") or 0
    if rows:
        for share, count in (
            ("quarantine_share", "quarantined_rows"),
            ("filtered_share", "filtered_rows"),
            ("late_share", "late_rows"),
            ("duplicate_share", "duplicate_rows"),
        ):
            if run.get(count) is not None:
                found[share] = run[count] / rows
        for reason in run.get("quarantine_reasons") or []:
            found[f"quarantine_share:{reason['name']}"] = reason["rows"] / rows
    if run.get("watermark") is not None and run.get("ended_at") is not None:
        found["watermark_lag_s"] = max(0.0, (run["ended_at"] - run["watermark"]).total_seconds())
    found.update({measured["name"]: measured["value"] for measured in run.get("metrics") or []})
    return found


def run_metrics(accounts: Sequence[BatchAccount], distinct_keys: int | None = None) -> dict[str, float]:
    """What a run measured: `distinct_keys` (of its input, counted in the query: None, a pattern
    keyed by nothing) and `null_share:<column>` (its batches' nulls in each top-level column
    over their output rows, from the files' footers; none while a batch's are unknown)."""
    found = {} if distinct_keys is None or not accounts else {"distinct_keys": float(distinct_keys)}
    if any(a.output_nulls is None or a.output_rows is None for a in accounts):
        return found
    wrote = [a for a in accounts if a.output_rows]  # a batch that wrote no file counted no column
    if not wrote:
        return found
    rows = sum(a.output_rows or 0 for a in wrote)
    columns = set.intersection(*(set(a.output_nulls or {}) for a in wrote))
    return found | {f"null_share:{c}": sum((a.output_nulls or {})[c] for a in wrote) / rows for c in sorted(columns)}


def kind_of(metric: str) -> Metric:
    return METRICS.get(metric) or METRICS[metric.split(":", 1)[0] + ":"]


@dataclass(frozen=True)
class Sample:
    """A run's metrics, and when it started (for the rhythms)."""

    run_id: str
    started_at: datetime
    metrics: dict[str, float]


class Anomaly(BaseModel):
    """A metric outside its expected range (the run report's `anomalies`, the log's too)."""

    metric: str
    value: float
    expected_low: float
    expected_high: float
    compared_runs: list[str]  # the runs it was held against
    compared_with: str = "all"  # which: all, or those of its rhythm ("hour 14h", "weekday Mon")

    def describe(self) -> str:
        runs = f"{len(self.compared_runs)} runs" + ("" if self.compared_with == "all" else f" at {self.compared_with}")
        return (
            f"anomaly: {self.metric} {_shown(self.metric, self.value)}, expected "
            f"{_shown(self.metric, self.expected_low)} to {_shown(self.metric, self.expected_high)} "
            f"(the {runs} before)"
        )


def judge(current: Sample, history: Sequence[Sample], min_runs: int) -> list[Anomaly]:
    """The metrics of `current` outside their expected range, against `history` (comparable
    runs, oldest first); none while fewer than `min_runs` runs have the metric."""
    recent = list(history)[-WINDOW:]
    found = []
    for metric, value in sorted(current.metrics.items()):
        absent = kind_of(metric).absent
        runs = [_with(run, metric, absent) for run in recent if metric in run.metrics or absent is not None]
        if len(runs) < min_runs:
            continue
        compared_with, runs = _comparable(metric, current, runs, min_runs)
        low, high = _expected(metric, [run.metrics[metric] for run in runs])
        if value > high or (value < low and kind_of(metric).direction == "both"):
            compared = [run.run_id for run in runs]
            found.append(
                Anomaly(
                    metric=metric,
                    value=value,
                    expected_low=low,
                    expected_high=high,
                    compared_runs=compared,
                    compared_with=compared_with,
                )
            )
    return found


def _with(run: Sample, metric: str, absent: float | None) -> Sample:
    if metric in run.metrics or absent is None:
        return run
    return Sample(run.run_id, run.started_at, {**run.metrics, metric: absent})


def _expected(metric: str, values: list[float]) -> tuple[float, float]:
    middle = median(values)
    deviation = MAD_TO_SIGMA * median(abs(v - middle) for v in values)
    half = max(SPREAD * deviation, kind_of(metric).floor(middle))
    low = middle - half
    return (max(low, 0.0), middle + half)


def _comparable(metric: str, current: Sample, runs: list[Sample], min_runs: int) -> tuple[str, list[Sample]]:
    """All the runs, or those of the current one's hour of day or weekday where the history
    shows that rhythm: around each group's own median, its runs deviate at most RHYTHM as
    much as all runs do around theirs (a mean deviation, which a day and a night apart
    cannot hide as a median one can)."""
    overall = _deviation(metric, [runs])
    best: tuple[str, list[Sample], float] = ("all", runs, overall)
    for name, key in (("hour", _hour), ("weekday", _weekday)):
        groups: dict[str, list[Sample]] = {}
        for run in runs:
            groups.setdefault(key(run.started_at), []).append(run)
        own = groups.get(key(current.started_at), [])
        full = [group for group in groups.values() if len(group) >= min_runs]
        if len(own) < min_runs or len(full) < 2:
            continue
        within = _deviation(metric, full)
        if within <= RHYTHM * overall and within < best[2]:
            best = (f"{name} {key(current.started_at)}", own, within)
    return best[0], best[1]


def _deviation(metric: str, groups: list[list[Sample]]) -> float:
    """The mean absolute deviation of the runs' values around their own group's median."""
    total, count = 0.0, 0
    for group in groups:
        values = [run.metrics[metric] for run in group]
        middle = median(values)
        total += sum(abs(v - middle) for v in values)
        count += len(values)
    return total / count if count else 0.0


def _hour(at: datetime) -> str:
    return f"{at.hour:02d}h"


def _weekday(at: datetime) -> str:
    return at.strftime("%a")


def _shown(metric: str, value: float) -> str:
    kind = kind_of(metric)
    if kind in (SHARE, REASON):
        return f"{value:.1%}"
    if kind is SECONDS:
        return f"{value:.0f}s"
    return f"{value:,.0f}"
