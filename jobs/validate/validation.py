"""Validate what a run committed, or the whole table, against its suite.

    run report -> the files its batches committed (Spark's sink log) -> DataFrame
    -> Great Expectations (the suite) + checks on the run reports
    -> verdict -> validation result beside the run report

Only committed files are read: a file the sink wrote but never committed (a crashed
batch) is not in the sink log, so it is never validated and never reaches readers.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger, with_recorded_schema
from jobs.declare import PipelineBase
from jobs.flow.enrich import read_dimension
from jobs.flow.patterns import pattern_of
from jobs.flow.query import output_schema
from jobs.flow.sink import read_committed
from jobs.history import log as history
from jobs.lake import fs
from jobs.lake.layout import Locations, is_s3, join, local_path
from jobs.run.report import RunReport, load_reports
from jobs.units import ID_TIME
from jobs.validate import gx
from jobs.validate.gx import ValidationError
from jobs.validate.result import ValidationResult, history_row, save_result
from jobs.validate.run_checks import run_report_checks
from jobs.validate.small_table import small_table
from jobs.validate.suite import Suite, load_suite

if TYPE_CHECKING:
    import pandas

log = logging.getLogger(__name__)


def site_folder(locations: Locations) -> Path:
    """Where GX builds the Data Docs site: in the reports folder, or, when the reports go
    to a bucket, in a local staging folder that is uploaded after each build."""
    if is_s3(locations.reports):
        return local_path(join(locations.quality, "data_docs_staging"))
    return local_path(join(locations.reports, "data_docs"))


def with_window_length(table: DataFrame | pandas.DataFrame) -> DataFrame | pandas.DataFrame:
    """Adds window_length_s = window_end - window_start, in whole seconds (windowed tables)."""
    if "window_end" not in table.columns:
        return table
    if isinstance(table, DataFrame):
        return table.withColumn("window_length_s", F.unix_timestamp("window_end") - F.unix_timestamp("window_start"))
    seconds = (table["window_end"] - table["window_start"]).dt.total_seconds()
    return table.assign(window_length_s=seconds.floordiv(1).astype("Int64"))


def committed_table(
    spark: SparkSession, pipeline: PipelineBase, locations: Locations, files: list[str] | None
) -> DataFrame:
    """The committed output (the given files, or the whole table), with the output's schema."""
    dimension = None
    if pipeline.enrich is not None and fs.exists(pipeline.enrich.location(locations.dimensions)):
        dimension = read_dimension(spark, pipeline.enrich, locations.dimensions).limit(0)
    return read_committed(spark, output_schema(spark, pipeline, dimension), locations.output, files)


def rows_to_show(pipeline: PipelineBase, reports: list[RunReport]) -> bool:
    """Whether the runs used rows their table should show by now (`when: run_had_input`): not
    when every row read was a duplicate, late or quarantined, nor when the pattern holds rows
    in state, some are still held (windows, sessions or matches the watermark has not
    closed: their rows come out in a later run) and none came out."""
    stateful = pattern_of(pipeline).stateful_operators > 0
    return any(r.used_rows > 0 and (not stateful or not r.state_rows or r.output_rows) for r in reports)


def committed_files(checkpoint_log: CheckpointLog, batch_ids: list[int]) -> list[str]:
    files: list[str] = []
    for batch_id in batch_ids:
        batch_files = checkpoint_log.sink_files(batch_id)
        if batch_files is None:
            raise ValidationError(
                f"the sink log no longer lists the files of batch {batch_id} (compacted away); "
                "validate the whole table instead (--all)"
            )
        files.extend(batch_files)
    return files


def _validate(
    spark: SparkSession | None,
    pipeline: PipelineBase,
    locations: Locations,
    suite: Suite,
    result: ValidationResult,
    reports: list[RunReport],
    files: list[str] | None,
) -> ValidationResult:
    started = time.monotonic()
    pipeline = with_recorded_schema(pipeline, Ledger(locations.ledger))
    run_name = result.validation_id if result.scope == "table" else f"run-{result.validation_id}"
    if not any(r.batch_ids for r in reports):
        # No batch ran (no new files): nothing was written, and there is nothing to ask GX.
        result.checks = gx.skipped(list(suite.expectations), "the run processed no batch")
    else:
        _check_table(spark, pipeline, locations, suite, result, files, run_name, rows_to_show(pipeline, reports))
    result.checks += run_report_checks(suite, reports)
    result.duration_s = round(time.monotonic() - started, 2)
    result.decide()
    save_result(result, locations.runs)
    history.record_validation(history_row(result), pipeline, locations)
    _forget_old_results(pipeline, locations, keep=run_name)
    log.info("%s", result.summary())
    return result


def _check_table(
    spark: SparkSession | None,
    pipeline: PipelineBase,
    locations: Locations,
    suite: Suite,
    result: ValidationResult,
    files: list[str] | None,
    run_name: str,
    rows_due: bool,
) -> None:
    """The suite's expectations over the rows: with pandas when they are few (no Spark job),
    else on Spark (the session given, or one of its own)."""
    site = site_folder(locations)
    small = small_table(pipeline, CheckpointLog.of(locations), files)
    if small is not None:
        table, result.files_validated = small
        result.engine, result.rows_validated = "pandas", len(table)
        table = with_window_length(table)
        result.checks, result.data_docs_page = gx.run_checkpoint(
            table, pipeline.name, suite, locations.quality, site, run_name, rows_due
        )
        return
    from jobs.run.application import Application

    result.engine = "spark"
    spark = spark or Application.for_command(f"jobs-validate-{pipeline.name}", [pipeline], [locations]).session()
    with _on_spark(spark, pipeline, locations, files, result) as table:
        result.checks, result.data_docs_page = gx.run_checkpoint(
            table, pipeline.name, suite, locations.quality, site, run_name, rows_due
        )


@contextmanager
def _on_spark(spark: SparkSession, pipeline: PipelineBase, locations: Locations, files, result: ValidationResult):
    """A large output, read by Spark and cached while it is validated."""
    table = committed_table(spark, pipeline, locations, files).transform(with_window_length)
    result.files_validated = len(table.inputFiles())
    # Small tables: a handful of shuffle partitions, not Spark's 200, for the uniqueness checks.
    shuffle_partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(pipeline.state_partitions))
    table = table.cache()
    try:
        result.rows_validated = table.count()
        yield table
    finally:
        table.unpersist()
        spark.conf.set("spark.sql.shuffle.partitions", shuffle_partitions)


def _forget_old_results(pipeline: PipelineBase, locations: Locations, keep: str) -> None:
    """Retention's `runs` for what Great Expectations keeps itself: its results (with sample
    values) and their Data Docs pages, older than the run reports kept (jobs/run/retention.py)."""
    before = datetime.now(UTC) - timedelta(seconds=pipeline.retention.runs_after_s)
    for run_name in gx.forget_before(locations.quality, site_folder(locations), pipeline.name, before, keep):
        if is_s3(locations.reports):  # the site's copy in the bucket
            fs.remove_tree(join(locations.reports, "data_docs", "validations", pipeline.name, run_name))


def validate_run(
    spark: SparkSession | None,
    pipeline: PipelineBase,
    locations: Locations,
    report: RunReport,
    suite: Suite | None = None,
) -> ValidationResult:
    """Validates the rows one run committed, and its row accounting (`spark`: None starts one
    only if the output is too large for the pandas engine); and the rows of earlier runs whose
    validation did not finish (`unvalidated_before`): unvalidated is a state, never a pass."""
    ledger = Ledger(locations.ledger)
    earlier = unvalidated_before(ledger, locations.runs, report)
    reports = [report, *earlier]
    batches = sorted({b for r in reports for b in r.batch_ids})
    files = committed_files(CheckpointLog.of(locations), batches)
    result = ValidationResult(
        pipeline=pipeline.name,
        scope="run",
        validation_id=report.run_id,
        run_ids=[r.run_id for r in reports],
        validated_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    if earlier:
        log.info("  validating the rows of %d earlier run(s) no validation checked too", len(earlier))
    validated = _validate(spark, pipeline, locations, suite or load_suite(pipeline), result, reports, files)
    through = ledger.validated_through()
    if batches and (through is None or through < batches[-1]):  # 0 is a mark too: not rewritten
        ledger.record_validated_through(batches[-1])
    return validated


def unvalidated_before(ledger: Ledger, runs: str, report: RunReport) -> list[RunReport]:
    """The earlier runs whose committed batches no validation has checked: those past the
    ledger's mark (none when no validation has recorded one yet)."""
    through = ledger.validated_through()
    if through is None:
        return []
    pending = {b for b in ledger.accounted_batches() if b > through} - set(report.batch_ids)
    if not pending:
        return []
    return [r for r in load_reports(runs) if r.run_id != report.run_id and pending & set(r.batch_ids)]


def validate_table(
    spark: SparkSession | None,
    pipeline: PipelineBase,
    locations: Locations,
    suite: Suite | None = None,
) -> ValidationResult:
    """Validates the whole committed table, and the row accounting summed over all runs."""
    now = datetime.now(UTC)
    reports = [r for r in load_reports(locations.runs) if r.batch_ids]
    result = ValidationResult(
        pipeline=pipeline.name,
        scope="table",
        validation_id=f"table-{now.strftime(ID_TIME)}",
        run_ids=[r.run_id for r in reports],
        validated_at=now.isoformat(timespec="seconds"),
    )
    validated = _validate(spark, pipeline, locations, suite or load_suite(pipeline), result, reports, None)
    ledger = Ledger(locations.ledger)
    if ledger.accounted_batches():
        ledger.record_validated_through(max(ledger.accounted_batches()))
    return validated


def latest_report(runs: str, run_id: str | None = None) -> RunReport:
    """The report of run `run_id`, or of the latest run that ended (succeeded or stopped)."""
    reports = load_reports(runs)
    if run_id is not None:
        for report in reports:
            if report.run_id == run_id:
                return report
        raise ValidationError(f"no run {run_id} in {runs}")
    finished = [r for r in reports if r.status in ("succeeded", "stopped")]
    if not finished:
        raise ValidationError(f"no finished run to validate in {runs}; run the pipeline first")
    return finished[-1]
