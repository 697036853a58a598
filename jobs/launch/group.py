"""Several pipelines' runs in one Spark application, at once.

A small increment's run is mostly the application's start; pipelines that run on the
same schedule share one. Each member is still its own run: its own lock, checkpoint,
accounting, quarantine, run report and validation, and a session of its own (its own SQL
settings: shuffle partitions, a rule's ANSI mode) over the one SparkContext. A member
that is refused, fails or stops on its data ends alone; the others go on. What ends the
JVM ends them all (it running out of memory, or a member whose query would not stop, or
that lost its S3 lease, which halt it so that nothing more is written): their batches in
flight are redone by their next runs, as after any crash.

The application's settings are the group's (jobs/declare/groups.py: the largest memory);
the batch cap's default (jobs/flow/admission.py) divides the driver's heap among the
members running at once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from pyspark.sql import SparkSession

from jobs.declare.groups import group_spark_conf
from jobs.exit_codes import ExitCode
from jobs.launch.single import Member, run_and_validate
from jobs.run.context import RunOptions, run_log
from jobs.run.failure import one_line
from jobs.run.outcome import Outcome
from jobs.run.pending import pending_input


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
    """One application for every member, with the group's settings, the s3a settings if any
    member reads or writes a bucket, and Delta's if any member's table is Delta."""
    from jobs import executors
    from jobs.session import get_spark, merged_conf, s3a_conf, table_conf

    conf = group_spark_conf([m.pipeline for m in members])
    if any(m.locations.uses_s3 for m in members):
        conf = merged_conf(conf, s3a_conf())
    conf = merged_conf(conf, table_conf(m.pipeline.output.format for m in members))
    spark = get_spark("jobs-group", conf, new_bytes=new_bytes)
    for member in members:
        executors.check_reachable(spark.sparkContext.master, member.locations)
    return spark
