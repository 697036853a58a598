"""The streaming lifecycle, for any declared pipeline, as named steps:

    lock     one run per checkpoint (a flock, or a lease in a bucket)
    preflight  the declaration against the checkpoint, the landing, the schema, the dimension
    pending  what is new, read from the checkpoint's logs: with nothing new, the run ends here
             (audit and report) without starting Spark; a small increment starts lean
    recover  account the batches an interrupted run committed but did not account
    start    the query, at most so much per batch
    watch    await it: a line per batch, its batches accounted beside it, stop requests
    settle   account every committed batch left; the watermark and state it ended with
    audit    remove output no batch committed, name landed files never read, retention
and whatever happened, the run report is stored and, under the lock, the run appended to
the pipeline's history (jobs/history/log.py).

Exactly once: the landing source (jobs/flow/source.py) records which files each batch read,
in the checkpoint, and the table records which batches it committed (a Parquet table's
`_spark_metadata` log, a Delta table's transaction log with the query's id and batch); a
batch interrupted before its commit is redone from the same files on the next run.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import asdict
from datetime import UTC, datetime
from functools import partial

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from jobs.accounting.accounts import BatchAccount
from jobs.accounting.batches import Accounting, account_batches
from jobs.accounting.checkpoint import CheckpointLog, ms_to_iso
from jobs.accounting.ledger import IncompatibleCheckpoint
from jobs.declare import DeclarationError, PipelineBase
from jobs.flow.admission import BatchSize, batch_limits, inflated
from jobs.flow.patterns import pattern_of
from jobs.flow.query import start_query
from jobs.history import log as history
from jobs.lake.landing import source_landings
from jobs.lake.layout import Locations, StorageError, StorageUnavailable
from jobs.lake.locks import AlreadyRunning, LeaseLost, WriterLock, checkpoint_lock
from jobs.request import RunMode, RunRequest, TriggerKind
from jobs.run import owed, stop
from jobs.run.application import Application
from jobs.run.audit import remove_stray_output, skipped_files
from jobs.run.context import RunContext, run_log
from jobs.run.events import (
    BatchCommitted,
    Emit,
    Event,
    ReportStored,
    RunFailed,
    RunRefused,
    RunRefusedDeclaration,
    RunStopped,
    RunStoppedOnData,
    Started,
)
from jobs.run.failure import data_condition, failure_cause, one_line, state_reshaped
from jobs.run.pending import Pending, pending_input, record_listing
from jobs.run.preflight import before_spark, check_table, context_with_spark, context_without_spark, nowhere
from jobs.run.progress import ProgressWatch
from jobs.run.report import RuleCount, RunReport, RunStatus, last_state_rows, save
from jobs.run.retention import apply_retention
from jobs.run.warnings import judge_anomalies, warnings_of
from jobs.session import spark_log_file
from jobs.units import new_run_id

__all__ = ["RunFailed", "RunRefused", "RunRefusedDeclaration", "RunStopped", "RunStoppedOnData", "run"]


def _said(event: Event) -> None:
    """What a run says when its caller listens to nothing."""


def run(
    pipeline: PipelineBase, request: RunRequest, *, spark: SparkSession | None = None, emit: Emit = _said
) -> RunReport:
    """Run one pipeline once, as `request` asks, and store its run report. What it says as
    it goes (started, each batch committed, its report stored) goes to `emit`.

    Raises RunRefused (nothing was done), RunStopped or RunFailed; the report is
    stored and logged in every case but one: a run in the wrong place (`nowhere`), which writes nothing.
    """
    locations = request.locations
    report, log = _new_report(pipeline, request), run_log(pipeline.name)
    elsewhere = nowhere(pipeline, locations)  # the wrong place: no lock, no report is left there
    if elsewhere:
        log.error("%s: refused: %s", pipeline.name, elsewhere)
        raise RunRefused(elsewhere)
    reads = f"table {pipeline.source.table} at" if pipeline.source.table else "landing"
    log.info("%s: run %s, trigger %s, %s %s", pipeline.name, report.run_id, request.trigger, reads, locations.landing)
    emit(Started(pipeline.name, report.run_id))
    stop.begin()
    held, lock = ExitStack(), None  # the lock: released once the run is in the history
    try:
        lock = held.enter_context(
            checkpoint_lock(locations.ledger, pipeline.name, wait_s=pipeline.orchestration.timeout_s)
        )
        waited = f", after {lock.waited_s:.0f}s waiting" if lock.waited_s >= 1 else ""
        log.info("  lock: %s%s", lock.describe(), waited)
        _under_lock(pipeline, request, report, lock, spark, emit)
        report.finish(RunStatus.SUCCEEDED)
        report.warnings = warnings_of(report, locations.runs)
        judge_anomalies(report, pipeline, locations.runs)
    except (Exception, KeyboardInterrupt) as error:
        raise _ended(error, report, locations, spark is not None or report.spark_log is not None) from error
    finally:
        stop.end()
        with held:
            _store(report, request, emit, in_history=pipeline if _still_held(lock) else None)
    return report


def _still_held(lock: WriterLock | None) -> bool:
    """Whether this run holds the lock still: a lost lease may be another run's by now."""
    try:
        return lock is not None and lock.ensure_held() is None
    except LeaseLost:
        return False


def _under_lock(
    pipeline: PipelineBase,
    request: RunRequest,
    report: RunReport,
    lock: WriterLock,
    spark: SparkSession | None,
    emit: Emit,
) -> None:
    """preflight -> pending, then the run without Spark (nothing new) or with it."""
    before_spark(pipeline, request.locations, incremental=request.mode == RunMode.INCREMENTAL)
    pending = pending_input(pipeline, request)
    application = Application.for_runs(f"jobs-{pipeline.name}", [pipeline], [request], [pending])
    given = {"lock": lock, "run_id": report.run_id, "emit": emit}
    if not application.needs_spark:
        _without_spark(context_without_spark(pipeline, request, **given), report, pending)
        return
    run_log(pipeline.name).info("  pending: %s", pending.describe())
    spark = spark or application.session()
    lock.record_spark(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    report.spark_log = spark_log_file(spark)
    _execute(context_with_spark(spark, pipeline, request, **given), report, pending)


def _new_report(pipeline: PipelineBase, request: RunRequest) -> RunReport:
    started = datetime.now(UTC)
    return RunReport(
        run_id=request.run_id or new_run_id(started),
        pipeline=pipeline.name,
        trigger=str(request.trigger),
        started_at=started.isoformat(timespec="seconds"),
        locations=asdict(request.locations),
        link=request.link,
        rules={rule.name: RuleCount(action=rule.on_violation) for rule in pipeline.rules},
    )


def _without_spark(run: RunContext, report: RunReport, pending: Pending) -> None:
    """A run with nothing to read: what Spark would say is in its logs already, and the audit
    needs no Spark. A file that landed since the caller looked (`start_spark` off) is the
    next run's, as one landing a moment after any run's listing."""
    if pending.nothing_new:
        run.log.info("  pending: nothing new landed; Spark is not started")
    else:
        run.log.info("  pending: %s, left to the next run (this one starts no Spark)", pending.describe())
    committed = run.checkpoint_log.committed_batches()
    report.watermark = ms_to_iso(run.checkpoint_log.next_watermark_ms(committed[-1])) if committed else None
    report.state_rows = last_state_rows(run.locations.runs) if committed else 0  # no batch changed it
    _audit(run, report, pending, with_retention=True)


def _execute(run: RunContext, report: RunReport, pending: Pending) -> None:
    """recover -> start -> watch -> settle -> audit. Committed batches are accounted
    whatever ended the query; what ended it early is raised once they are."""
    store_as_it_goes = run.request.trigger.kind == TriggerKind.PROCESSING_TIME
    accounting = Accounting(
        partial(account_batches, run), run, partial(_counted, run, report), store_as_it_goes=store_as_it_goes
    )
    _recover(run, report, accounting)
    redone = run.checkpoint_log.batch_in_flight()  # read again as planned: its rows are no news
    query = _start(run, report, pending)
    watch = ProgressWatch(query, pattern_of(run.pipeline), run.log, redone)
    interrupted = _watch(run, query, watch, accounting)
    try:
        _settle(run, report, watch, accounting)
        _audit(run, report, pending, with_retention=interrupted is None)
    except Exception as error:
        if interrupted is None:
            raise
        run.log.warning("  could not account the committed batches (%s); the next run will", one_line(error))
    if interrupted is not None:
        raise state_reshaped(interrupted, run.pipeline) or interrupted


def _counted(run: RunContext, report: RunReport, accounts: list[BatchAccount]) -> None:
    """Batches accounted: in the report (with the distinct keys the run counted so far), and said."""
    report.add_batches(accounts, run.tally.distinct_keys())
    for account in accounts:
        run.emit(BatchCommitted(report.pipeline, account.batch_id, account.input_rows, account.output_rows or 0))


def _recover(run: RunContext, report: RunReport, accounting: Accounting) -> None:
    """Account the batches an interrupted earlier run committed but did not account."""
    unaccounted = sorted(set(run.checkpoint_log.committed_batches()) - run.ledger.accounted_batches())
    if not unaccounted:
        run.log.info("  recover: every committed batch is accounted")
        return
    run.log.info("  recover: accounting batches %s, committed by an interrupted earlier run", unaccounted)
    report.recovered_batch_ids = unaccounted
    accounting.account(unaccounted)


def _start(run: RunContext, report: RunReport, pending: Pending) -> StreamingQuery:
    """Start the query, batches limited to the driver's memory; few known new files (`pending`) named, not listed."""
    from jobs.session import heap_bytes

    declared, options = run.pipeline.spark_settings, run.request
    limits = batch_limits(
        heap_bytes(run.spark) // options.heap_shares,
        declared.max_files_per_trigger,
        declared.max_bytes_per_trigger,
        options.max_files_per_trigger,
        options.max_bytes_per_trigger,
    )
    limits = inflated(limits, pending.inflation)
    report.batch_limits = asdict(limits)
    run.log.info("  start: %s", limits.describe())
    if options.trigger.kind == TriggerKind.ONCE and (passed := limits.passed_by(pending.files, pending.bytes)):
        run.log.warning("  start: trigger once reads them all in one batch: %s (available-now reads batches)", passed)
    landed = source_landings(run.locations.landing, [s.name for s in run.pipeline.sources])
    listed = list(options.from_archive or [options.listed(landing) for landing in landed])
    check_table(run.spark, run.pipeline, run.checkpoint_log, run.dimension)  # a transform's columns
    return start_query(
        run.spark,
        run.pipeline,
        paths=landed if run.pipeline.source.table else pending.source_paths(landed, listed),  # a table: its sink log
        landings=landed,
        output=run.locations.output,
        checkpoint=run.locations.checkpoint,
        trigger=options.trigger,
        limits=limits,
        dimension=run.dimension,
        tally=run.tally,
    )


def _watch(
    run: RunContext, query: StreamingQuery, watch: ProgressWatch, accounting: Accounting
) -> BaseException | None:
    """Await the query, a line per batch, accounting its batches beside it; what ended it
    early (a stop request, a failure), once it is stopped. Raised at once: the lease was
    lost (what it committed is accounted by the run that holds the lease), or the JVM is gone."""
    try:
        while not query.awaitTermination(run.request.poll_s):
            if stop.requested():
                raise KeyboardInterrupt
            run.lock.ensure_held()
            watch.poll()
            accounting.follow(watch.metrics)
            watch.forget_through(accounting.accounted_through)  # a long run holds only what it needs
        return None
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            run.log.info("  stopping: the batch in flight, if any, is redone by the next run")
        stopped = stop.stop_query(query)
        accounting.settle()
        if not stopped:
            run.log.error(
                "  the query's JVM is gone (it died, or did not stop in time); the next run accounts its batches"
            )
        if not stopped or isinstance(error, LeaseLost):
            raise
        return error


def _settle(run: RunContext, report: RunReport, watch: ProgressWatch, accounting: Accounting) -> None:
    """Account every committed batch left; the watermark and the state the query ended with."""
    watch.poll()
    accounting.finish(watch.metrics)
    if run.pipeline.source.table and report.batch_ids:  # a reader: the upstream's batches it read (one log read)
        upstream = CheckpointLog("", run.locations.landing)  # none told of a staged folder (a backfill's)
        if committed := upstream.committing_batches():
            report.read_upstream(committed, "version" if upstream.is_delta() else "batch")
    committed = run.checkpoint_log.committed_batches()
    report.watermark = ms_to_iso(run.checkpoint_log.next_watermark_ms(committed[-1])) if committed else None
    report.state_rows = watch.last_state_rows
    ran = set(report.batch_ids)  # not a batch planned and then stopped before its commit
    sizes = watch.batch_sizes
    report.batch_sizes = [BatchSize(**size) for size in sizes if size["after_batch"] + 1 in ran]
    if report.state_rows is None:
        checkpoint = run.locations.checkpoint
        report.state_rows = pattern_of(run.pipeline).state_rows(run.spark, checkpoint) if committed else 0
    run.log.info("  settle: %d batch(es) accounted, watermark %s", len(report.batch_ids), report.watermark or "none")


def _audit(run: RunContext, report: RunReport, pending: Pending, *, with_retention: bool) -> None:
    """What the folders hold that Spark's logs do not say (jobs/run/audit.py), and retention."""
    stray = remove_stray_output(run.checkpoint_log, run.pipeline.retention.output_after_s, log=run.log)
    report.uncommitted_files_removed, report.expired_output_files_removed = stray
    if run.request.lists_all and run.pipeline.source.table is None:  # what a run does not list is not skipped
        landed = source_landings(run.locations.landing, [s.name for s in run.pipeline.sources])
        report.skipped_files, taken = skipped_files(landed, run.checkpoint_log, pending.listed, pending.not_files)
        report.found_late = list(pending.found_late)
        record_listing(run.ledger, landed, pending, taken)
    if run.pipeline.source.table_format == "delta":  # the upstream's rewrites passed over (jobs/run/owed.py)
        owed.record_skipped(run.checkpoint_log, run.locations.ledger)
        report.owed = owed.owed(run.locations.ledger, run.pipeline.name)
    if with_retention:
        report.retention = apply_retention(run)
    passed_over = len(report.skipped_files.overwritten)
    run.log.info("  audit: %d stray output file(s) removed, %d landed file(s) passed over", sum(stray), passed_over)


def _ended(error: BaseException, report: RunReport, locations: Locations, with_spark: bool) -> RuntimeError:
    """How the run ended, in its report; the error its caller sees."""
    refusals = AlreadyRunning | IncompatibleCheckpoint | StorageError | DeclarationError
    if isinstance(error, refusals) and not isinstance(error, StorageUnavailable):
        report.finish(RunStatus.REFUSED, one_line(error))
        return (RunRefusedDeclaration if isinstance(error, DeclarationError) else RunRefused)(report.error)
    if isinstance(error, LeaseLost):
        report.finish(RunStatus.FAILED, f"lost the checkpoint's lease: {error}")
        return RunFailed(report.error)
    if isinstance(error, KeyboardInterrupt):
        report.finish(RunStatus.STOPPED, None)
        return RunStopped("stopped on request")
    checkpoint_log = CheckpointLog.of(locations)
    report.finish(RunStatus.FAILED, failure_cause(error, checkpoint_log, report, locations.uses_s3))
    if with_spark:
        run_log(report.pipeline).error("  stack traces: %s", report.spark_log or "in the log of the JVM that died")
    report.stopped_on_data = data_condition(error) is not None
    return (RunStoppedOnData if report.stopped_on_data else RunFailed)(report.error)


def _store(report: RunReport, request: RunRequest, emit: Emit, in_history: PipelineBase | None) -> None:
    """Log the run's summary and store its report; once stored, and under the lock, append the
    run to the history (a store that could not take the report would only make the append wait)."""
    log = run_log(report.pipeline)
    log.info("%s", report.summary())
    try:
        uri = save(report, request.locations.runs, request.report_path)
    except StorageError as error:
        # The run's outcome matters more than its report: say so, and keep the run's error.
        log.error("  the run report could not be stored: %s", error)
        return
    log.info("  report: %s", uri)
    emit(ReportStored(report.pipeline, uri, report))
    if in_history is not None:
        history.record_run(report, request.locations, in_history.retention.runs_after_s)
