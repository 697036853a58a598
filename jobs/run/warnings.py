"""What a run that succeeded can still get wrong, from its run report and the ones before it:

    watermark_ahead     the watermark is ahead of now: an event stamped in the future moved it,
                        and every event before it is dropped as late from then on
    mostly_late         the last runs dropped most of their rows as late
    not_files           the landing holds links or odd S3 keys, which no run follows or reads
    files_landed_late   files landed in a day folder past the listing's lateness (read by a whole listing)

The run report carries them (`warnings`), its summary shows them, and the data quality
report's overview calls a pipeline with any of them `warning`, not healthy. No Spark.
And each metric of the run against its own history (`anomalies`, jobs/history/anomalies.py).
"""

from __future__ import annotations

from datetime import UTC, datetime

from jobs.declare import PipelineBase
from jobs.flow.patterns import pattern_of
from jobs.history import anomalies, log, rows
from jobs.lake.layout import StorageError
from jobs.run.audit import file_names
from jobs.run.failure import one_line
from jobs.run.report import RunReport, recent_reports
from jobs.units import duration

LATE_SHARE = 0.5  # more than half of the last runs' rows dropped as late
LATE_RUNS = 3  # ... over this many runs with input
HISTORY_RUNS = 20  # earlier run reports read for these


def warnings_of(report: RunReport, runs: str) -> list[str]:
    """What this run got wrong though it succeeded, against the runs before it (their reports in `runs`)."""
    try:
        earlier = recent_reports(runs, HISTORY_RUNS)
    except (StorageError, ValueError) as error:
        return [f"earlier run reports could not be read to compare this run with ({one_line(error)})"]
    return run_warnings([*earlier, report], datetime.now(UTC))


def judge_anomalies(report: RunReport, pipeline: PipelineBase, runs: str) -> None:
    """The run's metrics against the comparable runs before it (the event log's, or while
    there is none, the run reports' in `runs`): its `anomalies`, unless judging is off or the
    run had no input (nothing arriving is freshness's to say)."""
    quality = pipeline.quality
    if quality.anomalies == "off" or not report.input_rows:
        return
    try:
        earlier = log.run_rows(runs)
        if earlier is None:
            earlier = [_row(r) for r in recent_reports(runs, anomalies.WINDOW)]
    except Exception as error:  # noqa: BLE001 - delta-rs's errors have no common type; a record, not the outcome
        report.warnings.append(f"the run history could not be read to judge this run's metrics ({one_line(error)})")
        return
    samples = [_sample(row) for row in earlier if _comparable(row) and row["run_id"] != report.run_id]
    current = _sample(_row(report))
    if not pattern_of(pipeline).output_follows_input:  # how far the watermark moved sets it, not the input
        current.metrics.pop("output_rows", None)
    report.anomalies = anomalies.judge(current, samples, quality.min_runs)
    report.anomalies_fail = quality.anomalies == "fail"


def _row(report: RunReport) -> dict:
    return rows.run_row(report).to_pylist()[0]


def _comparable(row: dict) -> bool:
    """A run a run is judged against: one that succeeded with input."""
    return row["status"] == "succeeded" and bool(row["input_rows"])


def _sample(row: dict) -> anomalies.Sample:
    return anomalies.Sample(row["run_id"], row["started_at"], anomalies.metrics_of(row))


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
    if last.found_late:
        found.append(
            f"files_landed_late: {len(last.found_late)} file(s) landed in a dated folder of a day runs no longer "
            f"list (past the source's listing lateness), found by the whole listing and read now: "
            f"{file_names(last.found_late, whole=True)}; raise `source: listing: lateness` if they keep coming"
        )
    with_input = [r for r in runs if r.input_rows]
    recent = with_input[-LATE_RUNS:]
    rows, late = sum(r.input_rows for r in recent), sum(r.late_rows_dropped for r in recent)
    if rows and late > LATE_SHARE * rows:
        found.append(f"mostly_late: the last {len(recent)} run(s) with input dropped {late} of {rows} rows as late")
    return found


def _time(iso: str | None) -> datetime | None:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")) if iso else None
