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

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from jobs import declare
from jobs.declare import PipelineBase
from jobs.launch.execute import events_of, finished
from jobs.request import RunRequest
from jobs.run.application import Application
from jobs.run.events import Emit, Event, Finished
from jobs.run.lineage import listeners


def execute_group(requests: list[RunRequest], *, at_once: int | None = None) -> Iterator[Event]:
    """Run the requests in one application, `at_once` at a time (all of them by default);
    their events as they come, then each one's `Finished` in the requests' order. Spark
    starts only if one has something to read (and the requests' `start_spark` allows it)."""
    return events_of(lambda emit: _run_group(requests, emit, at_once), listeners(requests))


def _run_group(requests: list[RunRequest], emit: Emit, at_once: int | None) -> list[Finished]:
    at_once = min(at_once or len(requests), len(requests))
    pipelines = [declare.load(r.pipeline) for r in requests]
    application = Application.for_runs("jobs-group", pipelines, requests)
    spark = application.session() if application.needs_spark else None

    def one(pipeline: PipelineBase, request: RunRequest) -> Finished:
        # Each run's default batch cap is its share of the heap; with no Spark, a file landed
        # since the look above is the next run's.
        shared = replace(request, heap_shares=at_once, start_spark=spark is not None)
        return finished(shared, emit, pipeline=pipeline, spark=spark.newSession() if spark is not None else None)

    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="member") as pool:
        return list(pool.map(one, pipelines, requests))
