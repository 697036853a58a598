"""What a run is given (`RunOptions`) and what it works with (`RunContext`), built once by
the runner and handed to every step: accounting, query start, retention, failure handling."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from jobs.flow.sink import Trigger
from jobs.flow.source import landing_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from jobs.accounting.checkpoint import CheckpointLog
    from jobs.accounting.ledger import Ledger
    from jobs.declare import PipelineBase
    from jobs.flow.tally import Tally
    from jobs.lake.layout import Locations
    from jobs.lake.locks import CheckpointLock, S3Lease


def run_log(pipeline_name: str) -> logging.Logger:
    """Where every line of a pipeline's runs goes: one logger per pipeline, so that the lines
    of pipelines sharing one process (or one Airflow worker) can be told apart."""
    return logging.getLogger(f"jobs.run.{pipeline_name}")


@dataclass(frozen=True)
class RunOptions:
    """How a caller (the CLI, a DAG, a backfill) asks for one run."""

    trigger: Trigger = field(default_factory=Trigger)
    max_files_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    report_path: str | None = None
    # Limits what each run lists under the landing location (jobs/flow/source.py landing_path).
    landing_glob: str | None = None
    landing_since: date | None = None
    landing_until: date | None = None
    # Per source, what the run lists in retention's archive instead of the landing: a
    # rebuild reading the files retention moved (jobs/change/rebuild.py).
    from_archive: tuple[str, ...] | None = None
    # Chosen by the caller (the Airflow DAG) so that later steps find this run's report.
    run_id: str | None = None
    link: str | None = None  # where the run was started from (an Airflow task's page)
    poll_s: float = 1.0
    # Off: a run that finds new files leaves them to the next run rather than start Spark
    # here (an Airflow task that saw nothing new, run in the worker's own process).
    start_spark: bool = True
    # Runs sharing the JVM at once (a group): each batch's default cap is its share of the heap.
    heap_shares: int = 1

    def listed(self, landing: str) -> str:
        return landing_path(landing, self.landing_glob, self.landing_since, self.landing_until)

    @property
    def lists_all(self) -> bool:
        """Whether the run lists the whole landing (what it does not list is not skipped)."""
        return not (self.landing_glob or self.landing_since or self.from_archive)


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """One run's fixed parts, once its checkpoint is locked and its declaration checked."""

    spark: SparkSession | None  # None in a run with nothing to read
    pipeline: PipelineBase  # as declared, with its recorded schema and the files quarantined by hand
    locations: Locations
    options: RunOptions
    checkpoint_log: CheckpointLog  # Spark's logs (read only)
    ledger: Ledger  # the pipeline's own files beside them
    tally: Tally | None  # the query's count of every row it reads (None without Spark)
    dimension: DataFrame | None  # an enriching pipeline's static table
    lock: CheckpointLock | S3Lease
    run_id: str
    log: logging.Logger
