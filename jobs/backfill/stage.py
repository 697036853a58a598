"""Reprocess a closed range into the backfill's own work root, and stage every row of it.

In append mode a window is written once the watermark passes its end, and the
watermark only moves when later events arrive. An open-ended stream is right to hold
its last windows: more events may still come for them. A backfill's range is closed:
nothing more will arrive, so what the pattern still holds in state is final, and Spark
writes it itself, whatever it aggregates: once the range is read, one more batch is
planned that reads nothing and runs with a watermark past every held window (the
pattern's `closing_watermark_ms`); the next run of the query runs it, as Spark runs any
planned batch, and its stateful operators evict all they hold to the sink:

    staged result = the rows the sink committed (those of the closing batch: `held_rows`)

The closing batch is recorded in the ledger once planned, so a step run again does not
close the range twice; no sentinel event is read and nothing is appended to the table
besides the query's own batches, so staging again gives the same result.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger, with_recorded_schema
from jobs.backfill.request import BackfillRequest
from jobs.backfill.versions import SUMMARY
from jobs.columns import EVENT_TIME
from jobs.exit_codes import ExitCode
from jobs.flow.patterns import pattern_of
from jobs.lake import fs
from jobs.lake.layout import Locations, join, literal
from jobs.launch import execute, finished_of
from jobs.request import RunMode, RunRequest
from jobs.run.events import Finished
from jobs.run.report import RunReport, load_reports
from jobs.validate.validation import committed_table

_TALLIES = (
    "input_files",
    "input_rows",
    "used_rows",
    "quarantined_rows",
    "filtered_rows",
    "late_rows_dropped",
    "rescued_rows",
)


@dataclass(frozen=True)
class Staged:
    """A staged range, as its summary beside it says (_backfill.json)."""

    pipeline: str
    rows: int
    emitted_rows: int  # windows the watermark closed during the run
    held_rows: int  # the last windows, written by the batch that closed the range
    first_window: str | None  # for an events pipeline: its first event's time
    last_window: str | None
    input_files: int
    input_rows: int
    used_rows: int
    quarantined_rows: int
    filtered_rows: int
    late_rows_dropped: int
    rescued_rows: int
    rule_violations: dict[str, int]
    runs: list[str]

    def to_dict(self) -> dict:
        return asdict(self)

    def said(self) -> str:
        return (
            f"staged {self.rows} rows: {self.emitted_rows} windows the watermark closed during the run "
            f"+ {self.held_rows} last windows the range's closing batch wrote; windows {self.first_window} .. {self.last_window}"
        )


def reprocess(request: BackfillRequest, pipeline: declare.PipelineBase) -> Finished:
    """Run `pipeline` over the request's range, in the backfill's own work root and checkpoint
    (validated later, once staged), then the batch that closes the range; how it finished.
    A reader's range is a plain Parquet folder of its upstream's rows (jobs/backfill/readers.py),
    read as a table source reads a Parquet table."""
    reader = request.upstream is not None
    if reader:
        pipeline = pipeline.model_copy(
            update={"source": pipeline.source.model_copy(update={"table_format": "parquet"})}
        )
    dated = request.since is not None and not reader  # a landing's dt= folders
    run = RunRequest(
        request.pipeline,
        request.locations,
        mode=RunMode.RANGE_BACKFILL,
        max_files_per_trigger=request.max_files_per_trigger,
        landing_glob=request.landing_glob,
        landing_since=date.fromisoformat(request.since) if dated else None,
        landing_until=date.fromisoformat(request.until) if dated else None,
        validate=False,
    )
    declared = pipeline if reader else None  # a landing's reader: the declaration its name loads
    finished = finished_of(execute(run, pipeline=declared))
    if finished.code == ExitCode.OK and close_range(pipeline, request.locations):
        finished = finished_of(execute(run, pipeline=declared))  # Spark runs the closing batch
    return finished


def close_range(pipeline: declare.PipelineBase, locations: Locations) -> bool:
    """Plan the batch that closes the range read so far (once); whether one is planned and
    not run yet."""
    checkpoint_log, ledger = CheckpointLog.of(locations), Ledger(locations.ledger)
    committed = checkpoint_log.committed_batches()
    closing = ledger.closing_batch()
    if closing is not None or not committed:
        return closing is not None and closing not in committed
    watermark_ms = pattern_of(pipeline).closing_watermark_ms(checkpoint_log.next_watermark_ms(committed[-1]))
    if watermark_ms is None:
        return False  # nothing is held back
    # Planned before it is recorded: a step stopped in between finds the batch and runs it.
    ledger.record_closing_batch(checkpoint_log.plan_closing_batch(watermark_ms), watermark_ms)
    return True


def stage_closed_range(spark: SparkSession, pipeline: declare.PipelineBase, locations: Locations, stage: str) -> Staged:
    """Write every row of the range to `stage` (plain Parquet, replaced whole, _SUCCESS
    last) with its summary beside it."""
    ledger = Ledger(locations.ledger)
    pipeline = with_recorded_schema(pipeline, ledger)  # an inferred schema: the build's own
    closing, committed = ledger.closing_batch(), CheckpointLog.of(locations).committed_batches()
    holds_back = pattern_of(pipeline).closing_watermark_ms(0) is not None
    if committed and holds_back and (closing is None or closing not in committed):
        # Staged now, the windows still held would be missing from the table: never silently.
        raise RuntimeError("the range is not closed (its closing batch has not run): run the reprocess step again")
    writer = committed_table(spark, pipeline, locations, None).write
    writer = writer.mode("overwrite").option("partitionOverwriteMode", "static")
    if pipeline.output.partition_by:
        writer = writer.partitionBy(pipeline.output.partition_by)
    writer.parquet(stage)
    held_rows = (ledger.read_account(closing)["output_rows"] or 0) if closing is not None else 0
    table = spark.read.parquet(literal(stage))
    iso = "yyyy-MM-dd'T'HH:mm:ss'Z'"  # the session's zone is UTC
    # A window's bounds; for an events pipeline, its first and last event's time.
    first, last = ("window_start", "window_end") if "window_start" in table.columns else (EVENT_TIME, EVENT_TIME)
    bounds = table.agg(F.count(F.lit(1)), F.date_format(F.min(first), iso), F.date_format(F.max(last), iso)).first()
    reports = load_reports(locations.runs)
    staged = Staged(
        pipeline=pipeline.name,
        rows=bounds[0],
        emitted_rows=bounds[0] - held_rows,
        held_rows=held_rows,
        first_window=bounds[1],
        last_window=bounds[2],
        **{key: sum(getattr(r, key) for r in reports) for key in _TALLIES},
        rule_violations={
            name: sum(r.rules[name].violations for r in reports if name in r.rules) for name in _rule_names(reports)
        },
        runs=[r.run_id for r in reports],
    )
    fs.write_json(join(stage, SUMMARY), staged.to_dict())
    return staged


def _rule_names(reports: list[RunReport]) -> list[str]:
    return list(dict.fromkeys(name for report in reports for name in report.rules))
