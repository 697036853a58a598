"""What a checkpoint says: Spark's own logs, and the runner's files beside them.

Spark's logs (read only, never written here):
    offsets/N            batch N's planned source offsets and the watermark it ran with
    commits/N            batch N finished; the watermark for the next batch
    sources/0/K          the landed files the file source found at its offset K (K.compact: all so far)
    <output>/_spark_metadata/N   the files the sink committed in batch N

The runner's own files, under <checkpoint>/_pipeline/:
    declaration.json     the declaration's state contract the checkpoint was started with
    accounting/N.json    batch N's exact row accounting, written once the batch is accounted
    metrics/N.json       what only Spark counted in batch N (duplicates dropped), from its progress
    lock                 see storage.checkpoint_lock
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from jobs import storage
from jobs.spec import PipelineSpec
from jobs.storage import Locations, join


class IncompatibleCheckpoint(RuntimeError):
    """The declaration changed in a way the checkpoint cannot resume from."""


def _log_entries(uri: str) -> list[dict[str, Any]]:
    """The JSON lines of one Spark metadata log file (its first line is a version)."""
    lines = storage.read_text(uri).splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


def _batch_files(folder: str) -> dict[int, str]:
    """Batch id -> log file name, for names like '7' and '9.compact'."""
    found = {}
    for name in storage.list_names(folder):
        stem = name.removesuffix(".compact")
        if stem.isdigit():
            found[int(stem)] = name
    return found


def ms_to_iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


class CheckpointLog:
    def __init__(self, locations: Locations):
        self.locations = locations
        self.root = locations.checkpoint

    def has_started(self) -> bool:
        return bool(_batch_files(join(self.root, "offsets")))

    def committed_batches(self) -> list[int]:
        return sorted(_batch_files(join(self.root, "commits")))

    def _offsets(self, batch_id: int) -> list[str]:
        return storage.read_text(join(self.root, "offsets", str(batch_id))).splitlines()

    def batch_watermark_ms(self, batch_id: int) -> int:
        """The watermark batch `batch_id` ran with (0 before any)."""
        if batch_id < 0:
            return 0
        return int(json.loads(self._offsets(batch_id)[1]).get("batchWatermarkMs", 0))

    def source_log_offset(self, batch_id: int, source: int = 0) -> int:
        """How far into the source's own file log batch `batch_id` read (-1: nothing yet)."""
        if batch_id < 0:
            return -1
        lines = self._offsets(batch_id)
        try:
            return int(json.loads(lines[2 + source])["logOffset"])
        except (IndexError, ValueError, KeyError, TypeError):
            return -1

    def late_watermark_ms(self, batch_id: int) -> int:
        """The watermark that decides which of batch `batch_id`'s rows are late.

        Since Spark 3.4 a stateful operator drops input rows against the previous
        batch's watermark and evicts state against the current one (verified on
        Spark 4.2 in tests/integration/test_streaming.py).
        """
        return self.batch_watermark_ms(batch_id - 1)

    def next_watermark_ms(self, batch_id: int) -> int:
        """The watermark after batch `batch_id` committed."""
        text = storage.read_text(join(self.root, "commits", str(batch_id)))
        return int(json.loads(text.splitlines()[1]).get("nextBatchWatermarkMs", 0))

    def source_files(self, batch_id: int, source: int = 0) -> list[str]:
        """The landed files batch `batch_id` read.

        The file source keeps its own log, numbered by its own offsets, which advance only
        when new files arrive: a batch read the entries after the previous batch's offset
        up to its own.
        """
        first = self.source_log_offset(batch_id - 1, source) + 1
        last = self.source_log_offset(batch_id, source)
        folder = join(self.root, "sources", str(source))
        logs = _batch_files(folder)
        files = []
        for log_id in range(first, last + 1):
            files += self._source_log_entries(folder, logs, log_id)
        return files

    @staticmethod
    def _source_log_entries(folder: str, logs: dict[int, str], log_id: int) -> list[str]:
        if log_id in logs and not logs[log_id].endswith(".compact"):
            return [entry["path"] for entry in _log_entries(join(folder, logs[log_id]))]
        # Compacted: the first compact file at or after the id holds its entries.
        for candidate in sorted(b for b in logs if b >= log_id):
            if logs[candidate].endswith(".compact"):
                entries = _log_entries(join(folder, logs[candidate]))
                return [e["path"] for e in entries if e.get("batchId") == log_id]
        raise FileNotFoundError(f"source log entry {log_id} is missing from {folder}")

    def sink_files(self, batch_id: int) -> list[str] | None:
        """The output files the sink committed in batch `batch_id`; None if no longer known."""
        folder = join(self.locations.output, "_spark_metadata")
        logs = _batch_files(folder)
        if batch_id not in logs:
            return None
        added = {e["path"] for e in _log_entries(join(folder, logs[batch_id])) if e.get("action") == "add"}
        if logs[batch_id].endswith(".compact"):
            # A compact file lists every file so far: take away what earlier batches had.
            before = self._sink_files_through(batch_id - 1, logs, folder)
            if before is None:
                return None
            added -= before
        return sorted(added)

    def _sink_files_through(self, batch_id: int, logs: dict[int, str], folder: str) -> set[str] | None:
        if batch_id < 0:
            return set()
        compacts = [b for b in logs if b <= batch_id and logs[b].endswith(".compact")]
        start = max(compacts) if compacts else 0
        files: set[str] = set()
        for b in range(start, batch_id + 1):
            if b not in logs:
                return None
            entries = _log_entries(join(folder, logs[b]))
            files |= {e["path"] for e in entries if e.get("action") == "add"}
            files -= {e["path"] for e in entries if e.get("action") == "delete"}
        return files

    def output_has_other_log(self) -> bool:
        """The output already holds a table that this checkpoint did not write."""
        return not self.has_started() and bool(_batch_files(join(self.locations.output, "_spark_metadata")))

    # The runner's ledger of accounted batches.
    def accounted_batches(self) -> set[int]:
        return set(_batch_files(join(self.locations.pipeline_dir, "accounting")))

    def read_account(self, batch_id: int) -> dict[str, Any]:
        return json.loads(storage.read_text(join(self.locations.pipeline_dir, "accounting", str(batch_id))))

    def write_account(self, batch_id: int, account: dict[str, Any]) -> None:
        storage.write_json(join(self.locations.pipeline_dir, "accounting", str(batch_id)), account)

    # Spark's own counts of a batch, kept from its progress event (not kept by Spark).
    def write_metrics(self, batch_id: int, metrics: dict[str, Any]) -> None:
        storage.write_json(join(self.locations.pipeline_dir, "metrics", str(batch_id)), metrics)

    def read_metrics(self, batch_id: int) -> dict[str, Any] | None:
        """None when the run that committed the batch stopped before its progress was seen."""
        uri = join(self.locations.pipeline_dir, "metrics", str(batch_id))
        return json.loads(storage.read_text(uri)) if storage.exists(uri) else None


def _declaration_uri(locations: Locations) -> str:
    return join(locations.pipeline_dir, "declaration.json")


def contract(spec: PipelineSpec, locations: Locations) -> dict[str, Any]:
    return {**spec.state_contract(), "landing": locations.landing, "output": locations.output}


def check_declaration(spec: PipelineSpec, locations: Locations) -> None:
    """Refuse to resume a checkpoint whose query the declaration no longer describes.

    Runs before Spark starts, so a refused run changes nothing. Trigger, rate limits,
    watermark delay and the event time's format may change between runs.
    """
    log = CheckpointLog(locations)
    fresh_start = (
        f"To start fresh, move aside {locations.checkpoint}, {locations.output} and "
        f"{locations.quarantine} (or run with a new --root); the next run then reprocesses every landed file."
    )
    if log.output_has_other_log():
        raise IncompatibleCheckpoint(
            f"output {locations.output} already holds a table written under another checkpoint, "
            f"and checkpoint {locations.checkpoint} is new: Spark would skip batches it believes are written. "
            + fresh_start
        )
    uri = _declaration_uri(locations)
    if not storage.exists(uri):
        if log.has_started():
            raise IncompatibleCheckpoint(
                f"checkpoint {locations.checkpoint} was not started by this runner "
                f"(no _pipeline/declaration.json). {fresh_start}"
            )
        return
    recorded = json.loads(storage.read_text(uri))
    current = contract(spec, locations)
    changes = [
        f"{key}: {recorded.get(key)!r} -> {current.get(key)!r}"
        for key in sorted(set(recorded) | set(current))
        if recorded.get(key) != current.get(key)
    ]
    if changes:
        raise IncompatibleCheckpoint(
            f"pipeline '{spec.name}' changed since checkpoint {locations.checkpoint} was started, "
            f"in ways Spark cannot resume from: {'; '.join(changes)}. {fresh_start}"
        )


def record_declaration(spec: PipelineSpec, locations: Locations) -> None:
    uri = _declaration_uri(locations)
    if not storage.exists(uri):
        storage.write_json(uri, contract(spec, locations))
