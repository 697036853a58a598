"""What accounting needs of a run: its session, declaration, locations, Spark's logs and
the ledger, its tally, its lock and id. The runner's `RunContext` (jobs/run/context.py)
has all of it; accounting names only what it reads, so it does not depend on the run."""

from __future__ import annotations

from typing import Protocol

from pyspark.sql import DataFrame, SparkSession

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger
from jobs.declare import PipelineBase
from jobs.flow.tally import Tally
from jobs.lake.layout import Locations
from jobs.lake.locks import WriterLock


class RunView(Protocol):
    @property
    def spark(self) -> SparkSession | None: ...
    @property
    def pipeline(self) -> PipelineBase: ...
    @property
    def locations(self) -> Locations: ...
    @property
    def checkpoint_log(self) -> CheckpointLog: ...
    @property
    def ledger(self) -> Ledger: ...
    @property
    def tally(self) -> Tally | None: ...
    @property
    def dimension(self) -> DataFrame | None: ...
    @property
    def lock(self) -> WriterLock: ...
    @property
    def run_id(self) -> str: ...
