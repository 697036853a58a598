"""A landed file quarantined by hand: the way past a batch that fails on its data.

A batch that fails on a record every time Spark redoes it stops its pipeline for good.
Recording the file in the ledger (`Ledger.quarantine_file`) makes the next run's decoder
quarantine each of its lines unread (jobs/flow/functions.py, reason file_quarantined, the
given reason as the detail); the batch is redone from the same files, now without
failing, and accounted exactly like any other. Spark's checkpoint is not touched.
"""

from __future__ import annotations

from datetime import UTC, datetime

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger
from jobs.declare import PipelineBase
from jobs.flow.patterns import pattern_of
from jobs.lake.layout import Locations, normalize


class FileAlreadyRead(ValueError):
    """A committed batch read the file already: quarantining it would change nothing."""


def quarantine_file(pipeline: PipelineBase, locations: Locations, file: str, reason: str) -> str:
    """Record `file` (a path or URI, as the run's error names it) as quarantined; returns
    it as the ledger names it."""
    path = normalize(file)
    ledger = Ledger(locations.ledger)
    if path in ledger.quarantined_files():
        return path  # said before (an Airflow retry says it again)
    checkpoint_log = CheckpointLog.of(locations)
    in_flight = checkpoint_log.batch_in_flight()
    for source in range(len(pattern_of(pipeline).sources)):
        redone = set(checkpoint_log.source_files(in_flight, source)) if in_flight is not None else set()
        taken = set(checkpoint_log.recorded_files(source)) - redone
        if path in taken:
            raise FileAlreadyRead(
                f"{path} was read by a committed batch of {pipeline.name} already: quarantining it now would "
                "change nothing (its rows are in the table and the run reports)"
            )
    ledger.quarantine_file(path, reason, datetime.now(UTC).isoformat(timespec="seconds"))
    return path
