"""A landed file quarantined by hand: the way past a batch that fails on its data.

A batch that fails on a record every time Spark redoes it stops its pipeline for good.
Recording the file in the ledger (`Ledger.quarantine_file`) makes the next run's decoder
quarantine each of its lines unread (jobs/flow/functions.py, reason file_quarantined, the
given reason as the detail); the batch is redone from the same files, now without
failing, and accounted exactly like any other. Spark's checkpoint is not touched.
"""

from __future__ import annotations

import difflib
from datetime import UTC, datetime

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger
from jobs.declare import PipelineBase
from jobs.flow.patterns import pattern_of
from jobs.lake import listings
from jobs.lake.landing import source_landings
from jobs.lake.layout import Locations, normalize
from jobs.units import printable


class FileAlreadyRead(ValueError):
    """A committed batch read the file already: quarantining it would change nothing."""


class NotALandedFile(ValueError):
    """The file is neither in the batch in flight nor landed and not yet taken: quarantining
    it would get no batch past anything (a name mistyped, or cut short by a shell)."""


def quarantine_file(pipeline: PipelineBase, locations: Locations, file: str, reason: str) -> str:
    """Record `file` (a path or URI, as the run's error names it) as quarantined; returns
    it as the ledger names it. Only a file a run will read: one of the batch in flight, or
    landed and not yet taken."""
    path = normalize(file)
    ledger = Ledger(locations.ledger)
    if path in ledger.quarantined_files():
        return path  # said before (an Airflow retry says it again)
    checkpoint_log = CheckpointLog.of(locations)
    in_flight = checkpoint_log.batch_in_flight()
    landings = source_landings(locations.landing, [s.name for s in pattern_of(pipeline).sources])
    readable: set[str] = set()
    for source, landing in enumerate(landings):
        redone = set(checkpoint_log.source_files(in_flight, source)) if in_flight is not None else set()
        taken = set(checkpoint_log.recorded_files(source)) - redone
        if path in taken:
            raise FileAlreadyRead(
                f"{printable(path)} was read by a committed batch of {pipeline.name} already: quarantining it now would "
                "change nothing (its rows are in the table and the run reports)"
            )
        readable |= redone | (set(listings.listing(landing).files) - taken)
    if path not in readable:
        raise NotALandedFile(
            f"{printable(path)} is not a file {pipeline.name} will read: {_could_mean(path, readable)}"
        )
    ledger.quarantine_file(path, reason, datetime.now(UTC).isoformat(timespec="seconds"))
    return path


def _could_mean(path: str, readable: set[str]) -> str:
    """The files a mistyped (or shell-mangled) name could mean."""
    if not readable:
        return "no batch is in flight and nothing new has landed"
    names = {uri.rsplit("/", 1)[-1]: uri for uri in readable}
    close = difflib.get_close_matches(path.rsplit("/", 1)[-1], list(names), n=3, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(printable(names[name]) for name in close) + "?"
    return f"neither in the batch in flight nor landed and not yet taken ({len(readable)} such files)"
