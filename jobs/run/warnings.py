"""What a run that succeeded can still get wrong, from its run report and the ones before it:

    watermark_ahead     the watermark is ahead of now: an event stamped in the future moved it,
                        and every event before it is dropped as late from then on
    mostly_late         the last runs dropped most of their rows as late
    quarantine_jump     the last run quarantined a far larger share of its rows than the runs before
    not_files           the landing holds links or odd S3 keys, which no run follows or reads

The run report carries them (`warnings`), its summary shows them, and the data quality
report's overview calls a pipeline with any of them `warning`, not healthy. No Spark.
"""

from __future__ import annotations

from datetime import UTC, datetime

from jobs.lake.layout import StorageError
from jobs.run.audit import file_names
from jobs.run.failure import one_line
from jobs.run.report import RunReport, recent_reports
from jobs.units import duration

LATE_SHARE = 0.5  # more than half of the last runs' rows dropped as late
LATE_RUNS = 3  # ... over this many runs with input
JUMP_ABOVE = 0.10  # a quarantine share this much over the earlier runs' ...
JUMP_TIMES = 2  # ... and this many times it
JUMP_MIN_ROWS = 10  # quarantined rows, at least, for a jump to count
HISTORY_RUNS = 20  # earlier runs the quarantine share is held against


def warnings_of(report: RunReport, runs: str) -> list[str]:
    """What this run got wrong though it succeeded, against the runs before it (their reports in `runs`)."""
    try:
        earlier = recent_reports(runs, HISTORY_RUNS)
    except (StorageError, ValueError) as error:
        return [f"earlier run reports could not be read to compare this run with ({one_line(error)})"]
    return run_warnings([*earlier, report], datetime.now(UTC))


def run_warnings(runs: list[RunReport], now: datetime) -> list[str]:
    """The warnings of the last of `runs` (a pipeline's run reports, oldest first)."""
    if not runs:
        return []
    last, found = runs[-1], []
    watermark = _time(last.watermark)
    if watermark is not None and watermark > now:
        found.append(
            f"watermark_ahead: the watermark {last.watermark} is {duration((watermark - now).total_seconds())} ahead of now; "
            "an event stamped in the future moved it, and events before it are dropped as late "
            "(the source's event_time max_future quarantines such events)"
        )
    not_files = last.skipped_files.not_files
    if not_files:
        kinds = "; ".join(sorted(set(not_files.values())))
        found.append(
            f"not_files: {len(not_files)} entries of the landing are not regular files inside it ({kinds}), "
            f"never read: {file_names(list(not_files), whole=True)}; land the files themselves"
        )
    with_input = [r for r in runs if r.input_rows]
    recent = with_input[-LATE_RUNS:]
    rows, late = sum(r.input_rows for r in recent), sum(r.late_rows_dropped for r in recent)
    if rows and late > LATE_SHARE * rows:
        found.append(f"mostly_late: the last {len(recent)} run(s) with input dropped {late} of {rows} rows as late")
    if last.input_rows and last.quarantined_rows >= JUMP_MIN_ROWS:
        earlier = [r for r in with_input if r is not last][-HISTORY_RUNS:]
        before_rows = sum(r.input_rows for r in earlier)
        if before_rows:
            share, before = (
                last.quarantined_rows / last.input_rows,
                sum(r.quarantined_rows for r in earlier) / before_rows,
            )
            if share > before + JUMP_ABOVE and share > JUMP_TIMES * before:
                found.append(
                    f"quarantine_jump: {share:.0%} of this run's rows were quarantined, against {before:.1%} "
                    f"over the {len(earlier)} run(s) before"
                )
    return found


def _time(iso: str | None) -> datetime | None:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")) if iso else None
