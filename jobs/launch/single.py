"""One pipeline's run, then its validation (when it committed a batch, in the same
application): its outcome, as `python -m jobs run` and the Airflow tasks report it."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pyspark.sql import SparkSession

from jobs.declare import PipelineBase
from jobs.lake.layout import Locations
from jobs.run.context import RunOptions
from jobs.run.outcome import Outcome, run_outcome
from jobs.validate.suite import Suite

# Great Expectations' context is not known to be thread-safe: one run validates at a time.
_validating = threading.Lock()


@dataclass(frozen=True)
class Member:
    """A pipeline to run: its declaration, its locations, and its suite (None: the run is
    not validated here, e.g. --no-validate, or a DAG's later task validates it)."""

    pipeline: PipelineBase
    locations: Locations
    suite: Suite | None


def run_and_validate(member: Member, options: RunOptions, spark: SparkSession | None = None) -> Outcome:
    """The run, then its validation when it succeeded and a suite is given."""
    outcome = run_outcome(member.pipeline, member.locations, options, spark)
    if outcome.report is None or member.suite is None:
        return outcome
    from jobs.validate.validation import validate_run

    report = outcome.report
    if report.batch_ids and spark is None:
        from jobs.session import spark_for

        pipeline = member.pipeline
        spark = spark_for(member.locations, f"jobs-{pipeline.name}", table_format=pipeline.output.format)
    with _validating:
        result = validate_run(
            spark if report.batch_ids else None, member.pipeline, member.locations, report, member.suite
        )
    return outcome.validated(result.status)
