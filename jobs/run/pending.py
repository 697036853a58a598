"""What a run would read, known before Spark starts: whether there is anything to do at
all (a run with nothing new starts no JVM) and how much (a small increment starts lean,
jobs/jvm/archive.py).

Read from the same logs Spark reads: a landed file the file source has taken is in its
log; one it would pass over (more than maxFileAge older than the newest taken, see
jobs/run/audit.py) is not new either. It lists what the run lists: the whole landing, or
its dt= folders from --landing-since on, which keeps a long history cheap for both.
Anything this cannot tell from the logs (a batch to redo, batches to account, a listing
by --landing-glob) needs Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.accounting.checkpoint import CheckpointLog, Recorded
from jobs.accounting.ledger import Ledger
from jobs.declare import PipelineBase
from jobs.lake import delta, delta_source, gzip_size, listings
from jobs.lake.landing import dated_folders, new_files_path, source_landings
from jobs.lake.layout import join
from jobs.request import RunRequest, TriggerKind
from jobs.run.audit import MAX_FILE_AGE_MS

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
    # Per source, when the whole landing was listed: every file listed (location ->
    # modification time, ms) and what the source had taken then (its log read up to a point),
    # which the run's audit judges and reads on from rather than listing and reading again.
    listed: tuple[dict[str, int], ...] | None = None
    taken: tuple[Recorded, ...] | None = None
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
        if self.named is None:
            return listed
        return [
            (new_files_path(landing, files) if files else None) or whole
            for landing, whole, files in zip(landings, listed, self.named, strict=True)
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
    recorded: list[Recorded] = []
    not_files: dict[str, str] = {}
    for source, landing in enumerate(source_landings(request.locations.landing, [s.name for s in pipeline.sources])):
        recorded.append(checkpoint_log.recorded_through(source))
        found = _listed(landing, request)
        not_files |= found.skipped
        new = _new_files(found, recorded[-1][0])
        files, size = files + len(new), size + sum(found.files[uri][0] for uri in new)
        gzipped += [(uri, found.files[uri][0]) for uri in new if uri.endswith(".gz") and found.files[uri][0]]
        named.append(tuple(new))
        listed.append({uri: mtime_ms for uri, (_, mtime_ms) in found.files.items()})
    inflation = _inflation(gzipped)
    if not request.lists_all:
        return Pending(files, size, inflation=inflation, not_files=not_files)
    named_files = tuple(named) if files <= NAMED_FILES else None
    return Pending(
        files,
        size,
        named=named_files,
        listed=tuple(listed),
        taken=tuple(recorded),
        inflation=inflation,
        not_files=not_files,
    )


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


def _new_files(found: listings.Listing, taken: dict[str, int]) -> list[str]:
    """The files of a listing the source has not taken, in its order: the source passes over
    a file older than MAX_FILE_AGE_MS before the newest it took, as Spark's does."""
    passed_over_before = max(taken.values()) - MAX_FILE_AGE_MS if taken else None
    return [
        uri
        for uri, (_, mtime_ms) in found.files.items()
        if uri not in taken and (passed_over_before is None or mtime_ms >= passed_over_before)
    ]


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
