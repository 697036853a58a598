"""The streaming lifecycle, for any declared pipeline.

    lock the checkpoint -> check the declaration against it -> account what an interrupted
    run left -> start the query -> await it, showing progress -> account the new batches
    -> store the run report

Exactly once: Spark's file source records which files each batch read, and its file
sink records which output files each batch committed, both in the checkpoint; a batch
interrupted before its commit is redone from the same files on the next run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from jobs.declare import PipelineBase
from jobs.flow.admission import Limits, batch_limits
from jobs.flow.enrich import check_dimension, dimension_uri, read_dimension
from jobs.flow.patterns import pattern_of
from jobs.flow.query import source_landings, start_query
from jobs.flow.sink import Trigger
from jobs.flow.source import check_inferred, infer_schema, landing_path
from jobs.flow.tally import Tally
from jobs.lake import fs
from jobs.lake.layout import Locations, StorageError
from jobs.lake.locks import AlreadyRunning, CheckpointLock, LeaseLost, S3Lease, checkpoint_lock
from jobs.run.accountant import Accountant
from jobs.run.accounting import account_batches
from jobs.run.audit import remove_stray_output, skipped_files
from jobs.run.checkpoint import CheckpointLog, ms_to_iso
from jobs.run.failure import failure_cause, one_line
from jobs.run.ledger import (
    IncompatibleCheckpoint,
    Ledger,
    check_contract,
    with_quarantined_files,
    with_recorded_schema,
)
from jobs.run.progress import ProgressWatch
from jobs.run.report import BatchAccount, RunReport, recent_reports, save
from jobs.run.retention import apply_retention
from jobs.run.warnings import HISTORY_RUNS, run_warnings
from jobs.units import new_run_id

# Set by a signal handler: the run in progress stops at its next poll. Raising
# KeyboardInterrupt from the handler instead could land inside a py4j call and break
# the connection to the JVM, turning a clean stop into a failed run.
_stop_requested = threading.Event()
_run_in_progress = threading.Event()


def request_stop() -> bool:
    """Ask the run in progress to stop cleanly; False if no run is in progress."""
    _stop_requested.set()
    return _run_in_progress.is_set()


class RunFailed(RuntimeError):
    """The run started but did not finish; its report says why."""


class RunRefused(RuntimeError):
    """The run did not start, so nothing changed."""


class RunStopped(RuntimeError):
    """The run was asked to stop (Ctrl-C or SIGTERM) and stopped cleanly."""


@dataclass(frozen=True)
class RunOptions:
    trigger: Trigger = field(default_factory=Trigger)
    max_files_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    report_path: str | None = None
    # Limits what each run lists under the landing location (jobs/flow/source.py landing_path).
    landing_glob: str | None = None
    landing_since: date | None = None
    landing_until: date | None = None
    # Chosen by the caller (the Airflow DAG) so that later steps find this run's report.
    run_id: str | None = None
    link: str | None = None  # where the run was started from (an Airflow task's page)
    poll_s: float = 1.0

    def listed(self, landing: str) -> str:
        return landing_path(landing, self.landing_glob, self.landing_since, self.landing_until)


def checkpoint_contract(pipeline: PipelineBase, locations: Locations) -> dict[str, Any]:
    """What the checkpoint depends on: the pattern's contract, and where it reads and writes."""
    return {**pattern_of(pipeline).contract(), "landing": locations.landing, "output": locations.output}


def _stopped(query) -> bool:
    """Stop the query, waiting at most spark.sql.streaming.stopTimeout (BASE_CONF). One that
    does not stop in time (stuck in a stalled call) could still commit a batch whose files
    the clean-up would remove: its JVM is ended instead, as a crash would. False when the
    JVM is gone, so that this run accounts nothing more."""
    try:
        query.stop()
        return True
    except Exception:  # noqa: BLE001 - py4j's TimeoutException, or the JVM died
        try:
            running = query.isActive
        except Exception:  # noqa: BLE001 - the JVM is gone: nothing is left to stop
            return False
    if running:
        from jobs.session import halt_jvm

        halt_jvm()
    return not running


class _Run:
    """One run's state: the pipeline (with its recorded schema), where it lives, its logs."""

    def __init__(self, spark, pipeline, locations, options, report, echo, lock):
        self.spark: SparkSession = spark
        self.lock: CheckpointLock | S3Lease = lock
        self.pipeline: PipelineBase = pipeline
        self.locations: Locations = locations
        self.options: RunOptions = options
        self.report: RunReport = report
        self.echo: Callable[[str], None] = echo
        self.log = CheckpointLog(locations.checkpoint, locations.output)
        self.ledger = Ledger(locations.ledger)
        self.dimension: DataFrame | None = None
        self.tally = Tally(spark)  # the query's count of every row it reads
        processing_time = options.trigger.kind == "processing-time"
        self.accountant = Accountant(self.account, self.log, self.ledger, lock, report, processing_time)

    def account(self, batch_ids: list[int], store: bool, seen: dict[int, dict[str, Any]]) -> list[BatchAccount]:
        """Account these committed batches (jobs/run/accounting.py)."""
        return account_batches(
            self.spark,
            self.pipeline,
            self.log,
            self.ledger,
            self.locations.quarantine,
            batch_ids,
            self.report.run_id,
            self.tally,
            self.dimension,
            store,
            seen,
        )

    def prepare(self) -> None:
        """The recorded (or now inferred) schema, the dimension, the contract, and batches an
        interrupted run committed but did not account."""
        pipeline, echo = self.pipeline, self.echo
        if pipeline.source.infer_schema and self.ledger.recorded_schema() is None:
            listed = self.options.listed(self.locations.landing)
            fields = infer_schema(self.spark, listed)
            check_inferred(pipeline, fields)
            self.ledger.record_schema(fields, listed)
            echo(f"  inferred and recorded the schema: {', '.join(f'{k} {v}' for k, v in fields.items())}")
        self.pipeline = with_quarantined_files(with_recorded_schema(pipeline, self.ledger), self.ledger)
        if pipeline.enrich is not None:
            self.dimension = read_dimension(self.spark, pipeline.enrich, self.locations.dimensions)
            rows = check_dimension(self.dimension, pipeline.enrich)
            uri = dimension_uri(pipeline.enrich, self.locations.dimensions)
            echo(f"  dimension {pipeline.enrich.table}: {rows} rows from {uri}")
        self.ledger.record_contract(checkpoint_contract(pipeline, self.locations))
        pending = sorted(set(self.log.committed_batches()) - self.ledger.accounted_batches())
        if pending:
            echo(f"  accounting batches {pending}, committed by an interrupted earlier run")
            self.report.recovered_batch_ids = pending
            self.accountant.account(pending)

    def limits(self) -> Limits:
        from jobs.session import heap_bytes

        declared, options = self.pipeline.spark, self.options
        limits = batch_limits(
            heap_bytes(self.spark),
            declared.max_files_per_trigger,
            declared.max_bytes_per_trigger,
            options.max_files_per_trigger,
            options.max_bytes_per_trigger,
        )
        self.report.batch_limits = asdict(limits)
        self.echo(f"  {limits.describe()}")
        return limits

    def execute(self) -> None:
        self.prepare()
        options, pattern = self.options, pattern_of(self.pipeline)
        limits = self.limits()
        landings = [options.listed(landing) for landing in source_landings(self.pipeline, self.locations.landing)]
        query = start_query(
            self.spark,
            self.pipeline,
            landings,
            self.locations.output,
            self.locations.checkpoint,
            options.trigger,
            limits.max_files,
            limits.max_bytes,
            self.dimension,
            self.tally,
        )
        watch = ProgressWatch(query, pattern, self.echo)
        interrupted: BaseException | None = None
        try:
            while not query.awaitTermination(options.poll_s):
                if _stop_requested.is_set():
                    raise KeyboardInterrupt
                self.lock.check()
                watch.poll()
                self.accountant.follow(watch.metrics)
                watch.forget_through(self.accountant.accounted_through)  # a long run holds only what it needs
        except BaseException as error:  # committed batches are accounted whatever ended the query
            interrupted = error
            if isinstance(error, KeyboardInterrupt):
                self.echo("  stopping: the batch in flight, if any, is redone by the next run")
            stopped = _stopped(query)
            self.accountant.settle()
            if not stopped:
                self.echo(
                    "  the query's JVM is gone (it died, or did not stop in time); the next run accounts its batches"
                )
                raise
        if isinstance(interrupted, LeaseLost):
            raise interrupted  # fenced: what it committed is accounted by the run that holds the lease

        watch.poll()
        try:
            self.accountant.finish(watch.metrics)
            committed = self.log.committed_batches()
            self.report.watermark = ms_to_iso(self.log.next_watermark_ms(committed[-1])) if committed else None
            self.report.state_rows = watch.last_state_rows
            if self.report.state_rows is None:
                self.report.state_rows = pattern.state_rows(self.spark, self.locations.checkpoint) if committed else 0
            stray = remove_stray_output(self.log, self.pipeline.retention.output_after_s, self.echo)
            self.report.uncommitted_files_removed, self.report.expired_output_files_removed = stray
            # Not when the run lists part of the landing: what it does not list is not skipped.
            if not (options.landing_glob or options.landing_since):
                landed = source_landings(self.pipeline, self.locations.landing)
                self.report.skipped_files = skipped_files(landed, self.log)
            if interrupted is None:
                retention = self.pipeline.retention
                self.report.retention = apply_retention(retention, self.ledger, self.log, self.locations, self.echo)
        except Exception as error:
            if interrupted is None:
                raise
            self.echo(f"  could not account the committed batches ({one_line(error)}); the next run will")
        if interrupted is not None:
            raise interrupted


def _warnings(report: RunReport, locations: Locations) -> list[str]:
    """What this run got wrong though it succeeded, against the runs before it."""
    try:
        earlier = recent_reports(locations.runs, HISTORY_RUNS)
    except (StorageError, ValueError) as error:
        return [f"earlier run reports could not be read to compare this run with ({one_line(error)})"]
    return run_warnings([*earlier, report], datetime.now(UTC))


def run(
    pipeline: PipelineBase,
    locations: Locations,
    options: RunOptions = RunOptions(),
    spark: SparkSession | None = None,
    echo: Callable[[str], None] = print,
) -> RunReport:
    """Run one pipeline once with the given trigger; always stores a run report.

    Raises RunRefused (nothing was done), RunStopped or RunFailed; the report is
    stored and printed in every case.
    """
    started = datetime.now(UTC)
    report = RunReport(
        run_id=options.run_id or new_run_id(started),
        pipeline=pipeline.name,
        trigger=str(options.trigger),
        started_at=started.isoformat(timespec="seconds"),
        locations=asdict(locations),
        link=options.link,
    )
    echo(f"{pipeline.name}: run {report.run_id}, trigger {options.trigger}, landing {locations.landing}")
    _stop_requested.clear()
    _run_in_progress.set()
    try:
        with checkpoint_lock(locations.ledger, pipeline.name) as lock:
            log = CheckpointLog(locations.checkpoint, locations.output)
            contract = checkpoint_contract(pipeline, locations)
            check_contract(pipeline.name, contract, Ledger(locations.ledger), log, locations.quarantine)
            if not fs.exists(locations.landing):
                raise StorageError(
                    f"landing location {locations.landing} does not exist; land files there first "
                    f"(python -m jobs land FILE... --to {locations.landing}) or pass --landing"
                )
            if spark is None:
                from jobs.session import spark_for

                spark = spark_for(locations, f"jobs-{pipeline.name}", pipeline.spark.session_conf())
            from jobs.session import set_runtime_conf

            shuffle = {"spark.sql.shuffle.partitions": str(pipeline.state_partitions)}
            set_runtime_conf(spark, shuffle | pipeline.spark.sql_conf())
            _Run(spark, pipeline, locations, options, report, echo, lock).execute()
        report.finish("succeeded")
        report.warnings = _warnings(report, locations)
    except (AlreadyRunning, IncompatibleCheckpoint, StorageError) as error:
        report.finish("refused", one_line(error))
        raise RunRefused(report.error) from error
    except LeaseLost as error:
        report.finish("failed", f"lost the checkpoint's lease: {error}")
        raise RunFailed(report.error) from error
    except KeyboardInterrupt as error:
        report.finish("stopped", None)
        raise RunStopped("stopped on request") from error
    except Exception as error:
        log = CheckpointLog(locations.checkpoint, locations.output)
        report.finish("failed", failure_cause(error, log, report, locations.uses_s3))
        if spark is not None:
            from jobs.session import spark_log_file

            echo(f"  stack traces: {spark_log_file(spark) or 'in the log of the JVM that died'}")
        raise RunFailed(report.error) from error
    finally:
        _run_in_progress.clear()
        echo(report.summary())
        try:
            echo(f"  report: {save(report, locations.runs, options.report_path)}")
        except StorageError as error:
            # The run's outcome matters more than its report: say so, and keep the run's error.
            echo(f"  the run report could not be stored: {error}")
    return report
