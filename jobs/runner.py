"""The streaming lifecycle, for any declared pipeline.

    lock the checkpoint -> check the declaration -> account what an interrupted run left
    -> start the query -> await it, showing progress -> account the new batches
    -> write the run report

Exactly once: Spark's file source records which files each batch read, and its file
sink records which output files each batch committed, both in the checkpoint; a batch
interrupted before its commit is redone from the same files on the next run.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from jobs import s3, storage
from jobs.accounting import account_batches
from jobs.checkpoint import CheckpointLog, IncompatibleCheckpoint, check_declaration, ms_to_iso, record_declaration
from jobs.dimensions import check_dimension, dimension_uri, read_dimension
from jobs.inference import resolve
from jobs.report import RunReport, new_run_id, save
from jobs.spec import PipelineSpec, SpecError, parse_duration_s, spark_duration
from jobs.storage import AlreadyRunning, Locations, StorageError
from jobs.transforms import LINE, SOURCE_FILE, pipeline_table

TRIGGERS = ("available-now", "once", "processing-time=<duration>")
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)b?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


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
class Trigger:
    kind: str
    interval_s: int | None = None

    @classmethod
    def parse(cls, text: str) -> Trigger:
        if text in ("available-now", "once"):
            return cls(text)
        if text.startswith("processing-time="):
            return cls("processing-time", parse_duration_s(text.split("=", 1)[1], "--trigger processing-time"))
        raise SpecError(f"--trigger {text!r}: use one of {', '.join(TRIGGERS)}")

    def __str__(self) -> str:
        return f"processing-time={self.interval_s}s" if self.interval_s else self.kind


def parse_size(text: str) -> int:
    """'64m' -> 67108864. Plain numbers are bytes."""
    match = _SIZE.match(text)
    if not match:
        raise SpecError(f"size {text!r}: use a number of bytes or a number with k, m, g or t (e.g. 64m)")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]


@dataclass(frozen=True)
class RunOptions:
    trigger: Trigger = Trigger("available-now")
    max_files_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    report_path: str | None = None
    # Limits what each run lists under the landing location (see landing_paths).
    landing_glob: str | None = None
    landing_since: date | None = None
    landing_until: date | None = None
    # Chosen by the caller (the Airflow DAG) so that later steps find this run's report.
    run_id: str | None = None
    poll_s: float = 1.0


def _one_line(error: BaseException) -> str:
    """The first meaningful line of an error, without a JVM stack trace."""
    text = str(error).strip() or type(error).__name__
    first = text.splitlines()[0].strip()
    return first[:500]


def _whole_text(error: BaseException) -> str:
    """An error with its causes and, for a JVM error, its Java stack trace ("Caused by: ...")."""
    parts, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        parts += [str(error), str(getattr(error, "_stackTrace", "") or "")]
        error = getattr(error, "_cause", None) or error.__cause__
    return "\n".join(parts)


def landing_path(landing: str, options: RunOptions) -> str:
    """What the source lists: the landing location, or only part of it.

    A long history under date-organised prefixes (landing/dt=2023-07-30/hour=10/...)
    would be listed in full by every run. `landing_glob` (e.g. 'dt=2023-07-*/*') or
    `landing_since` (only the dt=YYYY-MM-DD folders from that date on; `landing_until`
    stops at a date, for backfills) narrow the listing. Files already processed are
    remembered by the checkpoint either way, so narrowing never reprocesses; it only
    keeps older files from being listed.
    """
    if options.landing_glob and (options.landing_since or options.landing_until):
        raise SpecError("use --landing-glob or --landing-since/--landing-until, not both")
    if options.landing_until and not options.landing_since:
        raise SpecError("--landing-until needs --landing-since")
    if options.landing_since and options.landing_until and options.landing_since > options.landing_until:
        raise SpecError(f"--landing-since {options.landing_since} is after --landing-until {options.landing_until}")
    if options.landing_glob:
        if options.landing_glob.startswith("/") or ".." in options.landing_glob.split("/"):
            raise SpecError(f"--landing-glob {options.landing_glob!r}: give a pattern inside the landing location")
        return storage.join(landing, options.landing_glob)
    if options.landing_since:
        # One listing of the top level only, then the source lists just these folders.
        folders = storage.dated_folders(landing, options.landing_since, options.landing_until)
        if not folders:
            # Nothing yet: an empty folder lists nothing.
            return storage.join(landing, f"dt={options.landing_since.isoformat()}")
        return storage.join(landing, "{" + ",".join(folders) + "}")
    return landing


def landed_lines(spark: SparkSession, landing: str, options: RunOptions) -> DataFrame:
    """The streaming source: every line of every landed file, with the file it came from."""
    reader = spark.readStream.format("text").option("recursiveFileLookup", "true")
    if options.max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", options.max_files_per_trigger)
    if options.max_bytes_per_trigger:
        reader = reader.option("maxBytesPerTrigger", options.max_bytes_per_trigger)
    return reader.load(landing_path(landing, options)).select(
        F.col("value").alias(LINE), F.col("_metadata.file_path").alias(SOURCE_FILE)
    )


def start_query(
    spark: SparkSession,
    spec: PipelineSpec,
    locations: Locations,
    options: RunOptions,
    dimension: DataFrame | None = None,
) -> StreamingQuery:
    if spec.enrich is not None and dimension is None:
        dimension = read_dimension(spark, spec, locations)
    if spec.join is not None:
        # Each side lands in a folder of its own; the left is the checkpoint's sources/0.
        left, right = (storage.join(locations.landing, source.name) for source in spec.sources)
        table = pipeline_table(
            landed_lines(spark, left, options), spec, joined_lines=landed_lines(spark, right, options)
        )
    else:
        table = pipeline_table(landed_lines(spark, locations.landing, options), spec, dimension)
    writer = (
        table.writeStream.queryName(spec.name)
        .format(spec.output.format)
        .outputMode("append")
        .option("path", locations.output)
        .option("checkpointLocation", locations.checkpoint)
    )
    if spec.output.partition_by:
        writer = writer.partitionBy(spec.output.partition_by)
    trigger = options.trigger
    if trigger.kind == "available-now":
        writer = writer.trigger(availableNow=True)
    elif trigger.kind == "once":
        writer = writer.trigger(once=True)
    else:
        writer = writer.trigger(processingTime=spark_duration(trigger.interval_s))
    return writer.start()


def _state_rows_of(progress) -> int:
    return sum(operator.numRowsTotal for operator in progress.stateOperators)


def _duplicates_of(progress) -> int:
    return sum((operator.customMetrics or {}).get("numDroppedDuplicateRows", 0) for operator in progress.stateOperators)


def _spark_counts(progress) -> dict[str, int]:
    """What only Spark knows of a batch: repeats dropped by deduplication, and input rows
    a stream-stream join dropped as late (a join does no partial aggregation first, so
    Spark's count is of input rows)."""
    return {
        "duplicates_dropped": _duplicates_of(progress),
        "late_rows_dropped": sum(operator.numRowsDroppedByWatermark for operator in progress.stateOperators),
    }


def _progress_line(progress, deduplicates: bool) -> str:
    rate = progress.processedRowsPerSecond or 0.0
    watermark = (progress.eventTime or {}).get("watermark", "-")
    duplicates = f", duplicates dropped {_duplicates_of(progress)}" if deduplicates else ""
    return (
        f"  batch {progress.batchId}: {progress.numInputRows} lines read, {rate:.0f} lines/s, "
        f"watermark {watermark}, state rows {_state_rows_of(progress)}{duplicates}"
    )


class _Watch:
    """Follows a running query: prints each new batch's progress as it completes, and keeps
    what only Spark counted (duplicates dropped) in the checkpoint's ledger."""

    def __init__(self, query: StreamingQuery, spec: PipelineSpec, log: CheckpointLog, echo: Callable[[str], None]):
        self.query = query
        self.spec = spec
        self.log = log
        self.echo = echo
        self.seen: set[int] = set()
        self.last_state_rows: int | None = None

    def poll(self) -> None:
        for progress in self.query.recentProgress:
            # Idle progress events (no batch ran) carry no addBatch duration.
            if progress.batchId in self.seen or "addBatch" not in (progress.durationMs or {}):
                continue
            self.seen.add(progress.batchId)
            if progress.stateOperators:
                self.last_state_rows = _state_rows_of(progress)
            if self.spec.spark_counts:
                self.log.write_metrics(progress.batchId, _spark_counts(progress))
            self.echo(_progress_line(progress, bool(self.spec.deduplicate)))


def _state_rows(spark: SparkSession, spec: PipelineSpec, log: CheckpointLog) -> int:
    """The rows in state now, from the checkpoint (when no batch ran to say so)."""
    if not log.committed_batches():
        return 0
    reader = spark.read.format("statestore")
    if spec.join is not None:  # a join keeps each side's rows apart
        return sum(reader.option("joinSide", side).load(log.root).count() for side in ("left", "right"))
    operators = range(spec.stateful_operators)
    return sum(reader.option("operatorId", o).load(log.root).count() for o in operators)


def _execute(
    spark: SparkSession,
    spec: PipelineSpec,
    locations: Locations,
    options: RunOptions,
    report: RunReport,
    echo: Callable[[str], None],
) -> None:
    log = CheckpointLog(locations)
    spec = resolve(spark, spec, locations, landing_path(locations.landing, options), echo)
    dimension = read_dimension(spark, spec, locations)
    if dimension is not None:
        rows = check_dimension(dimension, spec)
        echo(f"  dimension {spec.enrich.table}: {rows} rows from {dimension_uri(spec.enrich, locations)}")
    record_declaration(spec, locations)
    committed_before = log.committed_batches()
    pending = sorted(set(committed_before) - log.accounted_batches())
    if pending:
        echo(f"  accounting batches {pending}, committed by an interrupted earlier run")
        report.recovered_batch_ids = pending
        report.add_batches(account_batches(spark, spec, log, pending))

    query = start_query(spark, spec, locations, options, dimension)
    watch = _Watch(query, spec, log, echo)
    accounted_through = max(committed_before, default=-1)
    interrupted: BaseException | None = None
    try:
        while not query.awaitTermination(options.poll_s):
            if _stop_requested.is_set():
                raise KeyboardInterrupt
            watch.poll()
            if options.trigger.kind == "processing-time":
                # A batch with counts only Spark knows is accounted once its progress was seen.
                new = [
                    b
                    for b in log.committed_batches()
                    if b > accounted_through and (b in watch.seen or not spec.spark_counts)
                ]
                if new:
                    report.add_batches(account_batches(spark, spec, log, new))
                    accounted_through = new[-1]
    except BaseException as error:  # noqa: BLE001 - committed batches are accounted whatever ended the query
        interrupted = error
        if isinstance(error, KeyboardInterrupt):
            echo("  stopping: the batch in flight, if any, is redone by the next run")
        query.stop()

    watch.poll()
    try:
        committed = log.committed_batches()
        report.add_batches(account_batches(spark, spec, log, [b for b in committed if b > accounted_through]))
        report.watermark = ms_to_iso(log.next_watermark_ms(committed[-1])) if committed else None
        report.state_rows = watch.last_state_rows
        if report.state_rows is None:
            report.state_rows = _state_rows(spark, spec, log)
    except Exception as error:
        if interrupted is None:
            raise
        echo(f"  could not account the committed batches ({_one_line(error)}); the next run will")
    if interrupted is not None:
        raise interrupted


def run(
    spec: PipelineSpec,
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
        pipeline=spec.name,
        trigger=str(options.trigger),
        started_at=started.isoformat(timespec="seconds"),
        locations=asdict(locations),
    )
    echo(f"{spec.name}: run {report.run_id}, trigger {options.trigger}, landing {locations.landing}")
    _stop_requested.clear()
    _run_in_progress.set()
    try:
        with storage.checkpoint_lock(locations, spec.name):
            check_declaration(spec, locations)
            if not storage.exists(locations.landing):
                raise StorageError(
                    f"landing location {locations.landing} does not exist; land files there first "
                    f"(python -m jobs land FILE... --to {locations.landing}) or pass --landing"
                )
            if spark is None:
                from jobs.session import spark_for

                spark = spark_for(
                    locations, f"jobs-{spec.name}", {"spark.sql.shuffle.partitions": str(spec.state_partitions)}
                )
            else:
                spark.conf.set("spark.sql.shuffle.partitions", str(spec.state_partitions))
            _execute(spark, spec, locations, options, report, echo)
        report.finish("succeeded")
    except (AlreadyRunning, IncompatibleCheckpoint, StorageError, s3.S3Error) as error:
        report.finish("refused", _one_line(error))
        raise RunRefused(report.error) from error
    except KeyboardInterrupt as error:
        report.finish("stopped", None)
        raise RunStopped("stopped on request") from error
    except Exception as error:
        cause = s3.explain_spark_error(_whole_text(error)) if locations.uses_s3 else None
        report.finish("failed", f"{cause} ({_one_line(error)})" if cause else _one_line(error))
        raise RunFailed(report.error) from error
    finally:
        _run_in_progress.clear()
        echo(report.summary())
        try:
            echo(f"  report: {save(report, locations, options.report_path)}")
        except StorageError as error:
            # The run's outcome matters more than its report: say so, and keep the run's error.
            echo(f"  the run report could not be stored: {error}")
    return report
