"""What a run would read, known before Spark starts: whether there is anything to do at
all (a run with nothing new starts no JVM) and how much (a small increment starts lean,
jobs/jvm/archive.py).

Read from the same log the landing source keeps: a landed file it has taken is in its index
(jobs/accounting/source_log.py), asked only of the folders listed. It lists what the run lists:
the whole landing; of a dated landing (dt=YYYY-MM-DD folders), the days from the newest it has
taken and those within the declared lateness of today (`source.listing`), every folder again at
least every `whole_every` (a file found late in a day already passed is taken and named); or
its dt= folders from --landing-since on. A long history then costs neither a listing nor a read
of everything ever taken. Anything this cannot tell from the logs (a batch to redo, batches to
account, a listing by --landing-glob) needs Spark.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger
from jobs.accounting.source_log import TakenFiles
from jobs.declare import PipelineBase
from jobs.declare.parts import Listing
from jobs.lake import delta, delta_source, fs, gzip_size, listings
from jobs.lake.landing import any_of, dated_folders, folder_date, new_files_path, source_landings
from jobs.lake.layout import join, literal
from jobs.request import RunRequest, TriggerKind

# Up to this many new files, the run hands Spark their names rather than the landing to list
# (jobs/lake/landing.py new_files_path): a long history costs its log, not a listing each run.
# Spark looks each named file up again, one by one up to its parallel-listing threshold
# (spark.sql.sources.parallelPartitionDiscovery.threshold, 32) and in a job of its own
# beyond it: more new files than that are a backlog, for which one listing is cheaper.
NAMED_FILES = 32
GZIP_SAMPLE = 64


@dataclass(frozen=True)
class Pending:
    files: int
    bytes: int
    needs_spark: str | None = None  # why Spark starts whatever landed
    # Per source, the new files' locations (as fs lists them), when there are few enough to name.
    named: tuple[tuple[str, ...], ...] | None = None
    # Per source, when the run lists the landing (whole or its open days): every file listed
    # (location -> modification time, ms), which the run's audit judges rather than listing again.
    listed: tuple[dict[str, int], ...] | None = None
    # Per source, what the source lists when not the whole landing: its open days (a pattern).
    days: tuple[str | None, ...] | None = None
    # Per source, whether its whole landing was listed; the new files found in days already passed.
    whole: tuple[bool, ...] = ()
    found_late: tuple[str, ...] = ()
    listed_at_ms: int = 0
    # What the listings passed over, never to be read (links, odd S3 keys: listings.Listing) -> why.
    not_files: dict[str, str] = field(default_factory=dict)
    # How many times their size the new gzip files' lines are, at most (jobs/flow/admission.py).
    inflation: float = 1.0

    @property
    def nothing_new(self) -> bool:
        return self.needs_spark is None and self.files == 0

    def source_paths(self, landings: list[str], listed: list[str]) -> list[str]:
        """What each source lists: its new files by name when they are few enough to name
        (jobs/lake/landing.py new_files_path), else its landing as the run lists it (`listed`)."""
        days = self.days or (None,) * len(landings)
        named = self.named or (None,) * len(landings)
        return [
            (new_files_path(landing, files) if files else None) or day or whole
            for landing, whole, day, files in zip(landings, listed, days, named, strict=True)
        ]

    def describe(self) -> str:
        if self.needs_spark:
            return self.needs_spark
        return f"{self.files} new file(s), {self.bytes:,} bytes" if self.files else "nothing new landed"


def pending_input(pipeline: PipelineBase, request: RunRequest) -> Pending:
    """The new files a run of `pipeline` would take now, or why only Spark can tell."""
    checkpoint_log = CheckpointLog.of(request.locations)
    why = _only_spark_can_tell(request, checkpoint_log)
    if why:
        return Pending(0, 0, why)
    if pipeline.source.table is not None:
        return _new_in_table(request.locations.landing, checkpoint_log)
    files = size = 0
    gzipped: list[tuple[str, int]] = []
    named: list[tuple[str, ...]] = []
    listed: list[dict[str, int]] = []
    days: list[str | None] = []
    whole: list[bool] = []
    found_late: list[str] = []
    not_files: dict[str, str] = {}
    listed_at_ms = int(time.time() * 1000)
    states = Ledger(request.locations.ledger).listing_state()
    for source, landing in enumerate(source_landings(request.locations.landing, [s.name for s in pipeline.sources])):
        if request.lists_all:
            days_open = open_days(landing, pipeline.sources[source].listing, states.get(str(source)), listed_at_ms)
            chosen, found = (days_open or (None, None))[0], listed_days(landing, days_open)
        else:
            chosen, found = None, _listed(landing, request)
        not_files |= found.skipped
        taken = checkpoint_log.source_log(source, landing).taken_in(found.files)
        new = [uri for uri in found.files if uri not in taken]
        files, size = files + len(new), size + sum(found.files[uri][0] for uri in new)
        gzipped += [(uri, found.files[uri][0]) for uri in new if uri.endswith(".gz") and found.files[uri][0]]
        named.append(tuple(new))
        listed.append({uri: mtime_ms for uri, (_, mtime_ms) in found.files.items()})
        days.append(None if chosen is None else join(literal(landing), any_of(chosen)))
        whole.append(chosen is None)
        if chosen is None:
            found_late += _late(landing, new, pipeline.sources[source].listing, states.get(str(source)), listed_at_ms)
    inflation = _inflation(gzipped)
    if not request.lists_all:
        return Pending(files, size, inflation=inflation, not_files=not_files)
    return Pending(
        files,
        size,
        named=tuple(named) if files <= NAMED_FILES else None,
        listed=tuple(listed),
        days=tuple(days),
        whole=tuple(whole),
        found_late=tuple(sorted(found_late)),
        listed_at_ms=listed_at_ms,
        inflation=inflation,
        not_files=not_files,
    )


def open_days(
    landing: str, listing: Listing, state: dict | None, now_ms: int
) -> tuple[list[str], frozenset[str]] | None:
    """The top-level names of `landing` a run lists (every name that is not a dt=YYYY-MM-DD
    folder, and the days from the newest the source has taken, `state`, or within the lateness
    of today, whichever is earlier), and the days it leaves out; None: the whole landing
    (nothing recorded yet, a whole listing due, or no day to leave out)."""
    if not state or not state.get("newest_day") or now_ms - state.get("whole_at_ms", 0) >= listing.whole_every_s * 1000:
        return None
    names = fs.list_names(landing)
    since = _cutoff(state, listing, now_ms)
    chosen = [name for name in names if (day := folder_date(name)) is None or day >= since]
    # Hadoop reads 'a:b' in a pattern as a URI with a scheme: such a landing is listed whole.
    if len(chosen) == len(names) or not chosen or any(":" in name for name in chosen):
        return None
    return chosen, frozenset(names) - set(chosen)


def _cutoff(state: dict, listing: Listing, now_ms: int) -> date:
    today = datetime.fromtimestamp(now_ms / 1000, UTC).date()
    return min(date.fromisoformat(state["newest_day"]), today - timedelta(seconds=listing.lateness_s))


def _late(landing: str, new: list[str], listing: Listing, state: dict | None, now_ms: int) -> list[str]:
    """Of the new files a whole listing found, those in a day a run no longer lists: landed late."""
    if not state or not state.get("newest_day"):
        return []
    since = _cutoff(state, listing, now_ms)
    return [uri for uri in new if (day := _day_of(landing, uri)) is not None and day < since]


def _day_of(landing: str, uri: str) -> date | None:
    """The day of the top-level dt=YYYY-MM-DD folder of `landing` that holds `uri`, if any."""
    relative = uri.removeprefix(landing.rstrip("/") + "/")
    return folder_date(relative.split("/", 1)[0]) if "/" in relative else None


def listed_days(landing: str, days_open: tuple[list[str], frozenset[str]] | None) -> listings.Listing:
    """The landing, but for the days `open_days` left out."""
    return listings.listing(landing, days_open[1] if days_open else frozenset())


def record_listing(ledger: Ledger, landings: list[str], pending: Pending, taken: list[TakenFiles]) -> None:
    """After a run that listed its landings: per source, the newest day it has taken, and when
    it last listed the whole landing (what the next run's `open_days` starts from)."""
    before = ledger.listing_state()
    states = {}
    for source, landing in enumerate(landings):
        was = before.get(str(source), {})
        whole = pending.whole[source] if source < len(pending.whole) else False
        states[str(source)] = {
            "newest_day": newest_day(landing, taken[source], was.get("newest_day")),
            "whole_at_ms": pending.listed_at_ms if whole else was.get("whole_at_ms", 0),
        }
    if states != before:
        ledger.record_listing_state(states)


def newest_day(landing: str, taken: TakenFiles, before: str | None) -> str | None:
    """The newest dt=YYYY-MM-DD folder of `landing` holding a file the source took, or `before`."""
    found = [before] if before else []
    found += [day.isoformat() for uri in taken if (day := _day_of(landing, uri)) is not None]
    return max(found, default=None)


def _new_in_table(table: str, checkpoint_log: CheckpointLog) -> Pending:
    """What a source reading another pipeline's table would take: the data files its sink
    log lists that the source has not taken (the upstream's own run may be adding more); of
    a Delta table, the files its versions since the source's last offset added."""
    if delta.is_delta(table):
        planned = checkpoint_log.last_planned()
        before = None if planned is None else checkpoint_log.delta_offset(planned)
        new_files = delta_source.files_read(table, before, delta_source.newest_end(table))
        return Pending(len(new_files), sum(int(entry.get("size") or 0) for entry in new_files.values()))
    committed = CheckpointLog("", table).committed_output_files()
    if committed is None:
        return Pending(0, 0, f"part of the sink log of table {table} is missing: Spark says what it can read")
    taken = checkpoint_log.recorded_files(0)
    new = [path for path in committed if path not in taken]
    return Pending(len(new), sum(int(committed[path].get("size") or 0) for path in new))


def _only_spark_can_tell(request: RunRequest, checkpoint_log: CheckpointLog) -> str | None:
    """Why the files a run takes cannot be known before Spark starts, if they cannot."""
    if request.trigger.kind == TriggerKind.PROCESSING_TIME:
        return "a processing-time trigger waits for files"
    if request.landing_glob:
        return "the run lists the landing by a pattern"
    if request.from_archive:
        return "the run reads retention's archive"
    in_flight = checkpoint_log.batch_in_flight()
    if in_flight is not None:
        return f"batch {in_flight} was planned and not committed: it is redone"
    if set(checkpoint_log.committed_batches()) - Ledger(request.locations.ledger).accounted_batches():
        return "committed batches are not accounted yet"
    return None


def _inflation(gzipped: list[tuple[str, int]]) -> float:
    """The most any of the new gzip files inflates, as their trailers say (a backlog's first
    GZIP_SAMPLE of them: one ranged read each). An estimate for sizing batches, not for
    counting: a file of several members says only its last's (jobs/lake/gzip_size.py)."""
    return max((gzip_size.gzip_stated_size(uri, size) / size for uri, size in gzipped[:GZIP_SAMPLE]), default=1.0)


def _listed(landing: str, request: RunRequest) -> listings.Listing:
    """What the run lists under `landing` (jobs/lake/landing.py landing_path)."""
    if request.landing_since is None:
        return listings.listing(landing)
    listed = listings.Listing({}, {})
    for folder in dated_folders(landing, request.landing_since, request.landing_until):
        found = listings.listing(join(landing, folder))
        listed.files.update(found.files)
        listed.skipped.update(found.skipped)
    return listed
