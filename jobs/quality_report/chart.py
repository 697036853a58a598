"""The run chart of the data quality report: one bar per run, placed at the run's start
time, split into the shares of its input rows that were used, quarantined, filtered (by the declaration's
`where`), late and duplicates:
every input row is one of these, so each bar is whole.

Shares, not counts: a run with a third of its rows quarantined shows a third of a bar
beside a run a hundred times its size (the counts are in each bar's tooltip and the run
table). The geometry is computed here; templates/report.html.j2 draws it as inline SVG.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jobs.run.report import RunReport
from jobs.validate.result import ValidationResult

CHART_RUNS = 40  # the chart shows the latest runs only; the table shows them all
WIDTH, HEIGHT = 760, 210
LEFT, RIGHT, TOP, BOTTOM = 44, 16, 12, 48  # margins: the share axis left, the time axis below
TIME_TICKS = 5
FATES = ("used", "quarantined", "filtered", "late", "duplicates")


def _rows(run: RunReport) -> dict[str, int]:
    return {
        "used": run.used_rows,
        "quarantined": run.quarantined_rows,
        "filtered": run.filtered_rows,
        "late": run.late_rows_dropped,
        "duplicates": run.duplicates_dropped or 0,
    }


def _time_label(moment: datetime, span_s: float) -> str:
    return moment.strftime("%H:%M:%S" if span_s < 600 else "%m-%d %H:%M" if span_s < 3 * 86400 else "%Y-%m-%d")


def run_chart(runs: list[RunReport], verdicts: dict[str, ValidationResult]) -> dict[str, Any] | None:
    """Bars, time ticks and share ticks of the latest runs that read rows; None if none did."""
    runs = [r for r in runs if r.input_rows][-CHART_RUNS:]
    if not runs:
        return None
    times = [datetime.fromisoformat(r.started_at) for r in runs]
    first, span = min(times), max((max(times) - min(times)).total_seconds(), 60.0)
    plot_w, plot_h, base = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM, HEIGHT - BOTTOM
    bar = max(3.0, min(16.0, plot_w / len(runs) * 0.6))

    def x_at(moment: datetime) -> float:
        return LEFT + (moment - first).total_seconds() / span * (plot_w - bar)

    bars = []
    for run, moment in zip(runs, times, strict=True):
        rows, y, segments = _rows(run), float(base), []
        total = sum(rows.values()) or 1
        for fate in FATES:
            if rows[fate]:
                height = rows[fate] / total * plot_h
                y -= height
                segments.append({"fate": fate, "y": y, "h": height, "value": rows[fate], "share": rows[fate] / total})
        verdict = verdicts.get(run.run_id)
        bars.append(
            {"run": run, "x": x_at(moment), "segments": segments, "verdict": verdict.status if verdict else None}
        )
    ticks = []
    for index in range(TIME_TICKS):
        seconds = span * index / (TIME_TICKS - 1)
        moment = datetime.fromtimestamp(first.timestamp() + seconds, tz=first.tzinfo)
        ticks.append({"x": x_at(moment) + bar / 2, "label": _time_label(moment, span)})
    shares = [{"y": base - plot_h * share, "label": f"{share:.0%}"} for share in (0, 0.25, 0.5, 0.75, 1)]
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "base": base,
        "bar": bar,
        "bars": bars,
        "time_ticks": ticks,
        "share_ticks": shares,
        "timezone": first.tzname() or "UTC",
    }


TREND_RUNS = 20  # the overview's trend: the latest runs with input
TREND_W, TREND_H = 120, 30


def trend(runs: list[RunReport]) -> dict[str, Any] | None:
    """The overview's small trend of the latest runs with input: their rows (to the most of
    them) and their quarantine share (to the most of it, at least 5%), as two polylines, and
    the runs with anomalies as dots; None without such runs."""
    runs = [r for r in runs if r.input_rows][-TREND_RUNS:]
    if not runs:
        return None
    step = (TREND_W - 4) / max(len(runs) - 1, 1)
    most_rows = max(r.input_rows for r in runs)
    shares = [r.quarantined_rows / r.input_rows for r in runs]
    most_share = max(0.05, *shares)

    def y(fraction: float) -> float:
        return round(TREND_H - 2 - fraction * (TREND_H - 4), 1)

    xs = [round(2 + i * step, 1) for i in range(len(runs))]
    rows = [y(r.input_rows / most_rows) for r in runs]
    quarantined = [y(share / most_share) for share in shares]
    return {
        "width": TREND_W,
        "height": TREND_H,
        "rows": " ".join(f"{x},{v}" for x, v in zip(xs, rows, strict=True)),
        "quarantined": " ".join(f"{x},{v}" for x, v in zip(xs, quarantined, strict=True)),
        "anomalies": [(x, v) for x, v, r in zip(xs, rows, runs, strict=True) if r.anomalies],
        "said": (
            f"last {len(runs)} runs with input: rows {runs[0].input_rows:,} to {runs[-1].input_rows:,} "
            f"(most {most_rows:,}); quarantined {shares[0]:.1%} to {shares[-1]:.1%}"
        ),
    }
