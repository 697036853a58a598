"""What a run works with (`RunContext`), built once by the runner from its request
(jobs/request.py) and handed to every step: accounting, query start, retention, failure
handling."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from jobs.accounting.checkpoint import CheckpointLog
    from jobs.accounting.ledger import Ledger
    from jobs.declare import PipelineBase
    from jobs.flow.tally import Tally
    from jobs.lake.layout import Locations
    from jobs.lake.locks import WriterLock
    from jobs.request import RunRequest
    from jobs.run.events import Event


def run_log(pipeline_name: str) -> logging.Logger:
    """Where every line of a pipeline's runs goes: one logger per pipeline, so that the lines
    of pipelines sharing one process (or one Airflow worker) can be told apart."""
    return logging.getLogger(f"jobs.run.{pipeline_name}")


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """One run's fixed parts, once its checkpoint is locked and its declaration checked."""

    spark: SparkSession | None  # None in a run with nothing to read
    pipeline: PipelineBase  # as declared, with its recorded schema and the files quarantined by hand
    locations: Locations  # the request's
    request: RunRequest
    checkpoint_log: CheckpointLog  # Spark's logs (read only)
    ledger: Ledger  # the pipeline's own files beside them
    tally: Tally | None  # the query's count of every row it reads (None without Spark)
    dimension: DataFrame | None  # an enriching pipeline's static table
    lock: WriterLock
    run_id: str
    log: logging.Logger
    emit: Callable[[Event], None]  # what the run says as it goes (jobs/run/events.py)
