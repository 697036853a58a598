"""What Spark's checkpoint and the table's log say, read only (never written here).

    <checkpoint>/metadata         the query's id (a Delta table's log names its batches by it)
    <checkpoint>/offsets/N        batch N's planned source offsets and the watermark it ran with
    <checkpoint>/commits/N        batch N finished; the watermark for the next batch
    <checkpoint>/sources/S/K      the files source S took at its offset K, and their index by
                                  landing folder (jobs/accounting/source_log.py)
    <output>/_spark_metadata/N    a Parquet table: the files the sink committed in batch N (N.compact: all so far)
    <output>/_delta_log/V.json    a Delta table: version V, one batch's commit (jobs/lake/delta.py)

Spark compacts its logs every 10 batches by default: a `.compact` file then holds every
entry so far, and older plain files may be deleted.

Spark names files in its logs as %-encoded URIs; everything read here names them as the
product does (`from_spark`: '/x/a b.json', 's3a://b/a b.json'), so nothing after converts.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from jobs.accounting.source_log import SourceLog, log_entries
from jobs.lake import delta, delta_source, fs, listings
from jobs.lake.layout import Locations, from_spark, join


def ms_to_iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    """'2023-07-30T10:03:06Z', or '...06.250Z': to the millisecond Spark keeps, never more."""
    moment = datetime.fromtimestamp(ms // 1000, UTC) + timedelta(milliseconds=ms % 1000)
    return moment.isoformat(timespec="milliseconds" if ms % 1000 else "seconds").replace("+00:00", "Z")


def _log_files(folder: str) -> dict[int, str]:
    """Batch id -> log file name, for names like '7' and '9.compact'."""
    found = {}
    for name in fs.list_names(folder):
        stem = name.removesuffix(".compact")
        if stem.isdigit():
            found[int(stem)] = name
    return found


class CheckpointLog:
    """A checkpoint's logs, and the sink log of the table it writes."""

    def __init__(self, checkpoint: str, output: str, landing: str = ""):
        self.checkpoint = checkpoint
        self.output = output
        self.landing = landing  # what its source reads: a Delta upstream's files are told from its log

    @classmethod
    def of(cls, locations: Locations) -> CheckpointLog:
        """The logs of a pipeline's (or a build's) checkpoint and table."""
        return cls(locations.checkpoint, locations.output, locations.landing)

    def has_started(self) -> bool:
        return bool(_log_files(join(self.checkpoint, "offsets")))

    def committed_batches(self) -> list[int]:
        return sorted(_log_files(join(self.checkpoint, "commits")))

    def first_planned(self) -> int | None:
        """The oldest batch whose offsets Spark still keeps (None before the first)."""
        return min(_log_files(join(self.checkpoint, "offsets")), default=None)

    def last_planned(self) -> int | None:
        """The newest batch with offsets (None before the first)."""
        return max(_log_files(join(self.checkpoint, "offsets")), default=None)

    def batch_in_flight(self) -> int | None:
        """The batch planned but not committed (a run that ended mid-batch), if any."""
        planned = self.last_planned()
        committed = max(self.committed_batches(), default=-1)
        return planned if planned is not None and planned > committed else None

    def plan_closing_batch(self, watermark_ms: int) -> int:
        """Plan the batch after the last committed one to read nothing new and run with
        `watermark_ms`; returns its id. Spark runs a planned batch as its offsets say when the
        query starts again: its stateful operators then evict (and write) all they hold up to
        that watermark, as in any batch. The offsets are the last batch's, in the log's one
        version (a layout Spark changes is refused, not guessed at)."""
        last = max(self.committed_batches())
        lines = self._offsets(last)
        if lines[0] != "v1":
            raise ValueError(f"{self.checkpoint}: offsets of version {lines[0]!r}, not v1: cannot plan a closing batch")
        metadata = json.loads(lines[1]) | {"batchWatermarkMs": watermark_ms}
        fs.write_text(
            join(self.checkpoint, "offsets", str(last + 1)),
            "\n".join([lines[0], json.dumps(metadata, separators=(",", ":")), *lines[2:]]),
        )
        return last + 1

    def _offsets(self, batch_id: int) -> list[str]:
        return fs.read_text(join(self.checkpoint, "offsets", str(batch_id))).splitlines()

    def batch_watermark_ms(self, batch_id: int) -> int:
        """The watermark batch `batch_id` ran with (0 before any)."""
        if batch_id < 0:
            return 0
        return int(json.loads(self._offsets(batch_id)[1]).get("batchWatermarkMs", 0))

    def batch_time_ms(self, batch_id: int) -> int:
        """The time Spark gave batch `batch_id` (its `current_timestamp()`), kept for when it is redone."""
        return int(json.loads(self._offsets(batch_id)[1])["batchTimestampMs"])

    def late_watermark_ms(self, batch_id: int) -> int:
        """The watermark that decides which of batch `batch_id`'s rows are late.

        Since Spark 3.4 a stateful operator drops input rows against the previous
        batch's watermark and evicts state against the current one (verified on
        Spark 4.2 in tests/integration/test_streaming.py).
        """
        return self.batch_watermark_ms(batch_id - 1)

    def next_watermark_ms(self, batch_id: int) -> int:
        """The watermark after batch `batch_id` committed."""
        text = fs.read_text(join(self.checkpoint, "commits", str(batch_id)))
        return int(json.loads(text.splitlines()[1]).get("nextBatchWatermarkMs", 0))

    def _source_log_offset(self, batch_id: int, source: int) -> int:
        """How far into the source's own file log batch `batch_id` read (-1: nothing yet)."""
        if batch_id < 0:
            return -1
        try:
            return int(json.loads(self._offsets(batch_id)[2 + source])["logOffset"])
        except (IndexError, ValueError, KeyError, TypeError):
            return -1

    def delta_offset(self, batch_id: int, source: int = 0) -> delta_source.Offset | None:
        """Where batch `batch_id` left Delta's source of a Delta upstream (None: another source's)."""
        offsets = self._offsets(batch_id)
        return delta_source.offset_of(offsets[2 + source]) if len(offsets) > 2 + source else None

    def source_files(self, batch_id: int, source: int = 0) -> list[str]:
        """The landed files batch `batch_id` read from source `source`."""
        return list(self.source_entries(batch_id, source))

    def source_entries(self, batch_id: int, source: int = 0) -> dict[str, int]:
        """The landed files batch `batch_id` read from source `source` -> the modification
        time (ms) each had when the source listed it.

        The file source keeps its own log, numbered by its own offsets, which advance only
        when new files arrive: a batch read the entries after the previous batch's offset
        up to its own.
        """
        if self.delta_offset(batch_id, source) is not None:  # a Delta upstream's source
            before = self.delta_offset(batch_id - 1, source) if batch_id > 0 else None
            read = delta_source.files_read(self.landing, before, self.delta_offset(batch_id, source))
            return {path: int(entry.get("modificationTime") or 0) for path, entry in read.items()}
        first = self._source_log_offset(batch_id - 1, source) + 1
        last = self._source_log_offset(batch_id, source)
        folder = join(self.checkpoint, "sources", str(source))
        logs = _log_files(folder)
        return {
            from_spark(entry["path"]): entry["timestamp"]
            for log_id in range(first, last + 1)
            for entry in _entries_of(folder, logs, log_id)
        }

    def commit_times_ms(self) -> dict[int, int]:
        """Batch id -> when it committed (its commit file's modification time), for the
        batches whose commit files Spark still keeps (the last 100 by default)."""
        times = listings.modification_times(join(self.checkpoint, "commits"))
        return {int(uri.rsplit("/", 1)[-1]): ms for uri, ms in times.items() if uri.rsplit("/", 1)[-1].isdigit()}

    def recorded_files(self, source: int = 0) -> dict[str, int]:
        """Every file source `source` has taken, in any batch -> the modification time (ms)
        it had when the source listed it."""
        planned = self.last_planned()
        if planned is not None and self.delta_offset(planned, source) is not None:
            # A Delta upstream's: the files of the table as its source has read it through.
            through = self.delta_offset(planned, source).version - 1
            files = delta.table_files(self.landing, through) if through >= 0 else {}
            return {path: int(entry.get("modificationTime") or 0) for path, entry in files.items()}
        return self.source_log(source).all_taken()

    def source_log(self, source: int = 0, landing: str = "") -> SourceLog:
        """Source `source`'s file log, whose index is kept by the folders of `landing`."""
        return SourceLog(join(self.checkpoint, "sources", str(source)), landing)

    def query_id(self) -> str | None:
        """The streaming query's id, kept across its runs (None before its first)."""
        metadata = join(self.checkpoint, "metadata")
        return fs.read_json(metadata)["id"] if fs.exists(metadata) else None

    def is_delta(self) -> bool:
        return delta.is_delta(self.output)

    def sink_files(self, batch_id: int) -> list[str] | None:
        """The output files the sink committed in batch `batch_id`; None if no longer known."""
        if self.is_delta():
            query_id = self.query_id()
            return None if query_id is None else delta.batch_files(self.output, query_id, batch_id)
        folder = join(self.output, "_spark_metadata")
        logs = _log_files(folder)
        if batch_id not in logs:
            return None
        added = {from_spark(e["path"]) for e in log_entries(join(folder, logs[batch_id])) if e.get("action") == "add"}
        if logs[batch_id].endswith(".compact"):
            # A compact file lists every file so far: take away what earlier batches had.
            before = _sink_entries_through(folder, logs, batch_id - 1)
            if before is None:
                return None
            added -= set(before)
        return sorted(added)

    def committed_output_files(self) -> dict[str, dict[str, Any]] | None:
        """Path -> sink log entry (`size`, `modificationTime`) of every file the table holds:
        exactly what Spark reads. None if a log file is missing."""
        if self.is_delta():
            return delta.table_files(self.output)
        folder = join(self.output, "_spark_metadata")
        logs = _log_files(folder)
        if not logs and fs.exists(join(self.output, "_SUCCESS")):  # a folder a batch wrote whole: its files
            found = listings.listing(self.output).files
            return {uri: {"size": size, "modificationTime": ms} for uri, (size, ms) in found.items() if _is_data(uri)}
        return _sink_entries_through(folder, logs, max(logs)) if logs else {}

    def committing_batches(self) -> dict[str, int | None]:
        """Path -> the batch of this table that committed it, for every file its sink log still
        names: None for a file only a compact log file names (its batch is no longer told
        apart); of a Delta table, the version that added it. What a reader of the table names
        as the upstream's batch (or version)."""
        if self.is_delta():
            return dict(delta_source.adding_versions(self.output))
        folder = join(self.output, "_spark_metadata")
        logs, found = _log_files(folder), {}
        for batch_id in sorted(logs):
            compact = logs[batch_id].endswith(".compact")
            for entry in log_entries(join(folder, logs[batch_id])):
                if entry.get("action") == "add":
                    found.setdefault(from_spark(entry["path"]), None if compact else batch_id)
        return found

    def uncommitted_output_files(self) -> list[str]:
        """Files in the output folder that the sink log does not list: what a batch wrote
        before its run died, and never committed. Spark redoes the batch into new files and
        never reads these, but plain readers of the folder (pyarrow, DuckDB) would.
        Only meaningful while no query writes to the output. Files past the table's declared
        retention are listed too: the sink log dropped them (jobs/run/audit.py tells which).
        A Delta table has none to name here: what no version lists may be a file an older
        version still holds (time travel), which only VACUUM may tell and remove."""
        if self.is_delta():
            return []
        committed = self.committed_output_files()
        if committed is None:
            return []  # a log file is missing: nothing is certain, so nothing is called stray
        names = {path.rsplit("/", 1)[-1] for path in committed}  # unique names (a UUID in each)
        written = [uri for uri in listings.list_files(self.output) if uri.rsplit("/", 1)[-1].startswith("part-")]
        return [uri for uri in written if uri.rsplit("/", 1)[-1] not in names]

    def output_has_other_log(self) -> bool:
        """The output already holds a table that this checkpoint did not write."""
        if self.has_started():
            return False
        return bool(_log_files(join(self.output, "_spark_metadata"))) or self.is_delta()


def _is_data(uri: str) -> bool:
    """Not one of the files Spark's readers pass over (_SUCCESS, a summary, a .crc)."""
    return not uri.rsplit("/", 1)[-1].startswith(("_", "."))


def _entries_of(folder: str, logs: dict[int, str], log_id: int) -> list[dict[str, Any]]:
    """A file source log's entries for one of its offsets, from its own file or a compact one."""
    if log_id in logs and not logs[log_id].endswith(".compact"):
        return log_entries(join(folder, logs[log_id]))
    # Compacted: the first compact file at or after the id holds its entries.
    for candidate in sorted(b for b in logs if b >= log_id):
        if logs[candidate].endswith(".compact"):
            return [e for e in log_entries(join(folder, logs[candidate])) if e.get("batchId") == log_id]
    raise FileNotFoundError(f"source log entry {log_id} is missing from {folder}")


def _sink_entries_through(folder: str, logs: dict[int, str], batch_id: int) -> dict[str, dict[str, Any]] | None:
    """Path -> sink log entry (size, modificationTime) of every file the sink had committed by
    batch `batch_id`: the last compact file then, plus later batches. None if a log is missing."""
    if batch_id < 0:
        return {}
    compacts = [b for b in logs if b <= batch_id and logs[b].endswith(".compact")]
    files: dict[str, dict[str, Any]] = {}
    for b in range(max(compacts) if compacts else 0, batch_id + 1):
        if b not in logs:
            return None
        for entry in log_entries(join(folder, logs[b])):
            if entry.get("action") == "add":
                files[from_spark(entry["path"])] = entry
            elif entry.get("action") == "delete":
                files.pop(from_spark(entry["path"]), None)
    return files


SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"  # where a Parquet footer keeps Spark's schema


def table_schema(checkpoint_log: CheckpointLog) -> dict[str, str] | None:
    """The table's columns and their Spark types, from the table itself (None: no table yet):
    Delta's log, or the newest Parquet file's footer and the partition folders."""
    from pyspark.sql.types import StructType

    output = checkpoint_log.output
    if delta.is_delta(output):
        schema = json.loads(delta.read_outside_spark(output).schema().to_json())
        return {f.name: f.dataType.simpleString() for f in StructType.fromJson(schema).fields}
    committed = checkpoint_log.committed_output_files() or {}
    if not committed:
        return None
    newest = max(committed, key=lambda path: (committed[path].get("modificationTime") or 0, path))
    written = fs.parquet_key_value(newest, SPARK_SCHEMA_KEY)
    if written is None:
        return None
    columns = {f.name: f.dataType.simpleString() for f in StructType.fromJson(json.loads(written)).fields}
    # Partition columns live in folder names: the product partitions by a UTC date only.
    for part in newest.removeprefix(output).strip("/").split("/")[:-1]:
        columns[part.partition("=")[0]] = "date"
    return columns
