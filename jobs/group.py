"""Several pipelines' runs in one Spark application, at once.

A small increment's run is mostly the application's start; pipelines that run on the
same schedule share one. Each member is still its own run: its own lock, checkpoint,
accounting, quarantine, run report and validation, and a session of its own (its own SQL
settings: shuffle partitions, a rule's ANSI mode) over the one SparkContext. A member
that is refused, fails or stops on its data ends alone; the others go on. What ends the
JVM ends them all (it running out of memory, or a member whose query would not stop, or
that lost its S3 lease, which halt it so that nothing more is written): their batches in
flight are redone by their next runs, as after any crash.

The batch cap's default (jobs/flow/admission.py) divides the driver's heap among the
members running at once.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from pyspark.sql import SparkSession

from jobs.declare import PipelineBase
from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations
from jobs.run import runner
from jobs.run.context import RunOptions, run_log
from jobs.run.failure import one_line
from jobs.run.pending import pending_input
from jobs.run.report import RunReport
from jobs.validate.suite import Suite

# Great Expectations' context is not known to be thread-safe: one member validates at a time.
_validating = threading.Lock()


@dataclass(frozen=True)
class Member:
    pipeline: PipelineBase
    locations: Locations
    suite: Suite | None  # None: the run is not validated here (--no-validate, a DAG's later task)


@dataclass(frozen=True)
class Outcome:
    pipeline: str
    status: str  # the run's: succeeded, failed, refused or stopped
    code: ExitCode
    report: RunReport | None = None  # a succeeded run's
    validation: str | None = None  # passed, warned or failed; None when not validated
    error: str | None = None

    def line(self) -> str:
        """One line: how the member's run ended, what it read and wrote, its validation."""
        report = self.report
        if report is None:
            return f"{self.pipeline}: {self.status}, exit {int(self.code)}: {self.error or self.code.meaning}"
        read = f"{report.input_files} file(s), {report.input_rows} rows in" if report.batch_ids else "nothing new"
        written = f", {report.output_rows} rows written" if report.batch_ids else ""
        checked = f", validation {self.validation}" if self.validation else ""
        return f"{self.pipeline}: succeeded in {report.duration_s}s, {read}{written}{checked}, exit {int(self.code)}"


def worst(codes: list[ExitCode]) -> ExitCode:
    """The exit code of a group: its members' worst."""
    order = [ExitCode.STOPPED, ExitCode.USAGE, ExitCode.FAILED, ExitCode.DATA, ExitCode.INVALID, ExitCode.REFUSED]
    return next((code for code in order if code in codes), ExitCode.OK)


def run_and_validate(member: Member, options: RunOptions, spark: SparkSession | None = None) -> Outcome:
    """One member's run, then its validation (when it committed a batch, in the same
    application); how it ended, as the exit code `python -m jobs run` gives it."""
    name = member.pipeline.name
    try:
        report = runner.run(member.pipeline, member.locations, options, spark=spark)
    except runner.RunRefused as error:
        return Outcome(name, "refused", ExitCode.REFUSED, error=str(error))
    except runner.RunStopped:
        code = ExitCode.OK if options.trigger.kind == "processing-time" else ExitCode.STOPPED
        return Outcome(name, "stopped", code, error="stopped on request")
    except runner.RunStoppedOnData as error:
        return Outcome(name, "failed", ExitCode.DATA, error=f"run failed: {error}")
    except runner.RunFailed as error:
        return Outcome(name, "failed", ExitCode.FAILED, error=f"run failed: {error}")
    if member.suite is None:
        return Outcome(name, "succeeded", ExitCode.OK, report)
    from jobs.validate.validation import validate_run

    if report.batch_ids and spark is None:
        from jobs.session import spark_for

        spark = spark_for(member.locations, f"jobs-{name}")
    with _validating:
        result = validate_run(
            spark if report.batch_ids else None, member.pipeline, member.locations, report, member.suite
        )
    code = ExitCode.INVALID if result.status == "failed" else ExitCode.OK
    return Outcome(name, "succeeded", code, report, result.status)


def run_group(members: list[Member], options: RunOptions, *, at_once: int | None = None) -> list[Outcome]:
    """Run the members in one application, `at_once` at a time (all of them by default);
    their outcomes in the members' order. Spark starts only if one has something to read
    (and `options.start_spark` allows it)."""
    at_once = min(at_once or len(members), len(members))
    pending = [pending_input(m.pipeline, m.locations, options) for m in members]
    spark = None
    if options.start_spark and not all(p.nothing_new for p in pending):
        new_bytes = None if any(p.needs_spark for p in pending) else sum(p.bytes for p in pending)
        spark = _group_session(members, new_bytes)
    # Each run's default batch cap is its share of the heap; with no Spark, a file landed
    # since the look above is the next run's.
    shared = replace(options, heap_shares=at_once, start_spark=spark is not None)

    def one(member: Member) -> Outcome:
        try:
            return run_and_validate(member, shared, spark.newSession() if spark is not None else None)
        except Exception as error:  # noqa: BLE001 - one member's surprise must not end the others
            run_log(member.pipeline.name).exception("  ended by an unexpected error")
            return Outcome(member.pipeline.name, "failed", ExitCode.FAILED, error=one_line(error))

    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="member") as pool:
        return list(pool.map(one, members))


def _group_session(members: list[Member], new_bytes: int | None) -> SparkSession:
    """One application for every member: each declaration's JVM settings (the largest
    memory), the s3a settings if any member reads or writes a bucket."""
    from jobs import executors
    from jobs.lake import s3
    from jobs.session import get_spark
    from jobs.units import parse_size

    conf: dict[str, str] = {}
    for member in members:
        for key, value in member.pipeline.spark.session_conf().items():
            larger = key.endswith(".memory") and key in conf and parse_size(conf[key]) >= parse_size(value)
            conf[key] = conf[key] if larger else value
    if any(m.locations.uses_s3 for m in members):
        conf.update(s3.spark_conf())
    spark = get_spark("jobs-group", conf, new_bytes=new_bytes)
    for member in members:
        executors.check_reachable(spark.sparkContext.master, member.locations)
    return spark
