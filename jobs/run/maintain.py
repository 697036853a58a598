"""A Delta table's upkeep (`python -m jobs maintain PIPELINE`, and the daily jobs_maintenance DAG):

    compact   OPTIMIZE rewrites each closed partition's small files into few large ones, in
              one commit. Closed: a date no batch can add rows to any more, the watermark
              having passed the end of its last window (later events are late); a table
              without partitions is compacted whole.
    vacuum    VACUUM removes the files no version within `retention.time_travel` needs (what
              OPTIMIZE replaced, what a failed batch wrote and never committed).

Both run under the pipeline's lock (jobs/lake/locks.py), as every writer of the table does:
on S3, Delta's log store assumes one driver commits at a time, and a run's batch in flight
has files no version names yet, which a short time_travel would vacuum. Upkeep started
during a run waits for it (up to the pipeline's `airflow.timeout`), and a run started
during upkeep waits for the upkeep.

Figures (files and bytes on disk and in the table's newest version, before and after) are
printed, and returned for the maintenance DAG's log.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

from pyspark.sql import SparkSession

from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.lake import delta, listings
from jobs.lake.layout import Locations
from jobs.lake.locks import checkpoint_lock
from jobs.units import UsageError

# Delta refuses a VACUUM that keeps less than this unless told (its own safety check).
DELTA_SAFE_RETENTION_S = 7 * 24 * 3600


@dataclass
class Upkeep:
    pipeline: str
    compacted: str  # which partitions OPTIMIZE took: "window_date < 2023-07-29", "the whole table" or "none"
    table_files_before: int  # data files in the table's newest version
    table_files_after: int
    disk_files_before: int  # data files in the folder (older versions' and uncommitted ones too)
    disk_files_after: int
    disk_bytes_before: int
    disk_bytes_after: int
    seconds: float
    waited_s: float = 0.0  # for the pipeline's lock, held by a run
    # Why VACUUM kept removed files longer than retention.time_travel: a reader has not read them yet.
    kept_for_readers: str | None = None

    def lines(self) -> list[str]:
        waited = [f"  lock: waited {self.waited_s:.0f}s for the run in progress"] if self.waited_s >= 1 else []
        return [
            *waited,
            f"  compact: {self.compacted}: {self.table_files_before} -> {self.table_files_after} file(s) in the table",
            f"  vacuum: {self.disk_files_before} -> "
            f"{self.disk_files_after} file(s) in the folder, {self.disk_bytes_before:,} -> {self.disk_bytes_after:,} bytes",
            *([f"  vacuum kept removed files longer: {self.kept_for_readers}"] if self.kept_for_readers else []),
            f"{self.pipeline} maintained in {self.seconds:.1f}s",
        ]

    def as_dict(self) -> dict:
        return asdict(self)


def closed_before(pipeline: declare.PipelineBase, checkpoint_log: CheckpointLog) -> str | None:
    """The first date that is not closed yet (partitions before it are), or None before any
    batch. Date D is closed once the watermark has passed the end of every window that starts
    on D (D + 1 day + the window's duration; a row without a window, once it passed D + 1 day):
    no batch can add rows to it."""
    committed = checkpoint_log.committed_batches()
    if not committed:
        return None
    watermark = datetime.fromtimestamp(checkpoint_log.next_watermark_ms(committed[-1]) / 1000, UTC)
    window = getattr(pipeline, "window", None)
    longest = timedelta(seconds=window.duration_s if window else 0)
    return (watermark - longest).date().isoformat()


def refuse_unless_maintainable(pipeline: declare.PipelineBase, locations: Locations) -> None:
    """UsageError, before Spark starts, when there is nothing a maintenance could do."""
    if pipeline.output.format != "delta":
        raise UsageError(
            f"{pipeline.name}'s table is Parquet: maintain compacts and vacuums Delta tables "
            "(a Parquet table's old files leave with retention.output_after)"
        )
    if not delta.is_delta(locations.output):
        raise UsageError(f"nothing to maintain yet: {pipeline.name} has committed no batch to {locations.output}")


def maintain(
    spark: SparkSession, pipeline: declare.PipelineBase, locations: Locations, readers: dict[str, Locations]
) -> Upkeep:
    """OPTIMIZE, then VACUUM, under the pipeline's lock. AlreadyRunning when a run held the
    lock for longer than a run may last. `readers`: the pipelines that read its table (name ->
    locations), whose unread files VACUUM keeps."""
    refuse_unless_maintainable(pipeline, locations)
    output = locations.output
    started = time.monotonic()
    lock = checkpoint_lock(locations.ledger, pipeline.name, "OPTIMIZE and VACUUM", pipeline.orchestration.timeout_s)
    with lock:
        on_disk = _disk(output)
        table_before = len(delta.table_files(output))
        compacted = _compact(spark, pipeline, CheckpointLog(locations.checkpoint, output))
        table_after = len(delta.table_files(output))
        kept = _vacuum(spark, pipeline, locations, readers)
        after = _disk(output)
    return Upkeep(
        pipeline=pipeline.name,
        compacted=compacted,
        table_files_before=table_before,
        table_files_after=table_after,
        disk_files_before=on_disk[0],
        disk_files_after=after[0],
        disk_bytes_before=on_disk[1],
        disk_bytes_after=after[1],
        seconds=time.monotonic() - started,
        waited_s=lock.waited_s,
        kept_for_readers=kept,
    )


def _disk(output: str) -> tuple[int, int]:
    """(files, bytes) of the data files in the table's folder, its log left out."""
    found = listings.sizes_and_times(output)
    return len(found), sum(size for size, _ in found.values())


def _compact(spark: SparkSession, pipeline: declare.PipelineBase, checkpoint_log: CheckpointLog) -> str:
    column = pipeline.partition_column if pipeline.output.partition_by else None
    table = f"delta.`{checkpoint_log.output}`"
    if column is None:
        spark.sql(f"OPTIMIZE {table}")
        return "the whole table"
    before = closed_before(pipeline, checkpoint_log)
    if before is None:
        return "none (no batch committed)"
    spark.sql(f"OPTIMIZE {table} WHERE {column} < '{before}'")
    return f"{column} < {before}"


def _vacuum(
    spark: SparkSession, pipeline: declare.PipelineBase, locations: Locations, readers: dict[str, Locations]
) -> str | None:
    """VACUUM, keeping removed files for retention.time_travel, or longer while a reader of the
    table has not read the versions that added them (why it kept them longer, if it did)."""
    keep_s, why = pipeline.retention.time_travel_s, None
    unread = _unread_since(locations.output, readers)
    if unread is not None and unread[0] > keep_s:
        keep_s, why = unread[0], f"{unread[0] / 3600:.1f} h, as {unread[1]} has not read version {unread[2]} and later"
    statement = f"VACUUM delta.`{locations.output}` RETAIN {keep_s / 3600:g} HOURS"
    check = "spark.databricks.delta.retentionDurationCheck.enabled"
    _with_check(spark, check, keep_s >= DELTA_SAFE_RETENTION_S, statement)
    return why


def _unread_since(output: str, readers: dict[str, Locations]) -> tuple[float, str, int] | None:
    """How long ago the oldest version a reader has not read was committed (seconds, and an
    hour more), that reader, and the version. A file that version or a later one added may
    be removed since (a compaction, a replacement) and still be read by that reader: VACUUM
    removes a file only once it has been removed for longer than it keeps. A reader that has
    not started reads the table as it is then: nothing to keep for it."""
    newest = max(delta.versions(output), default=-1)
    oldest: tuple[int, str] | None = None
    for name, where in readers.items():
        checkpoint_log = CheckpointLog.of(where)
        committed = checkpoint_log.committed_batches()
        offset = checkpoint_log.delta_offset(committed[-1]) if committed else None
        if offset is not None and offset.version <= newest and (oldest is None or offset.version < oldest[0]):
            oldest = (offset.version, name)
    if oldest is None:
        return None
    info = next((a["commitInfo"] for a in delta.commit(output, oldest[0]) if "commitInfo" in a), {})
    committed_ms = info.get("timestamp") or 0
    return time.time() - committed_ms / 1000 + 3600, oldest[1], oldest[0]


def _with_check(spark: SparkSession, check: str, enabled: bool, statement: str) -> None:
    """Run `statement` with Delta's retention check as the declaration allows: a declared
    time_travel under Delta's 7 days is the declaration's choice."""
    spark.conf.set(check, str(enabled).lower())
    try:
        spark.sql(statement).collect()
    finally:
        spark.conf.unset(check)
