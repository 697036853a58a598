"""The file ledger: every landed file a pipeline has taken, and every file its table holds.

Answered from what runs recorded, never by reading data again: each batch's account in
the ledger names its files with their rows (jobs/accounting/batches.py), and the sink log
names the table's files. Like Auto Loader's `cloud_files_state`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypedDict

from jobs.accounting.accounts import FileAccount
from jobs.accounting.checkpoint import CheckpointLog, ms_to_iso
from jobs.accounting.ledger import Ledger
from jobs.lake.layout import StorageError

_READERS = 16  # accounts read at once: on S3 each is a request


class TakenFile(TypedDict):
    """One landed file, the batch that read it and its rows there. Counts are None where
    they are not known: per file, for what Spark counts per batch only (a deduplicating
    pipeline's repeats, a join's late rows); for batches accounted before the ledger kept
    files. (Plain dicts: a ledger may name 100,000s.)"""

    path: str
    size_bytes: int | None
    modified_at: str | None
    batch_id: int
    run_id: str | None
    committed_at: str | None
    input_rows: int | None
    used_rows: int | None
    quarantined_rows: int | None
    filtered_rows: int | None
    late_rows_dropped: int | None
    rescued_rows: int | None
    violations: dict[str, int] | None  # rule -> the file's rows that break it


class TableFile(TypedDict):
    """One file of the output table, as the sink log committed it."""

    path: str
    size_bytes: int
    modified_at: str | None


def accounts_after(ledger: Ledger, batch_id: int = -1) -> list[dict[str, Any]]:
    """Every batch account after `batch_id` (as stored: BatchAccount's fields), in batch order."""
    batch_ids = sorted(b for b in ledger.accounted_batches() if b > batch_id)
    with ThreadPoolExecutor(_READERS) as pool:
        return list(pool.map(ledger.read_account, batch_ids))


def taken_files(
    ledger: Ledger, checkpoint_log: CheckpointLog, run_id: str | None = None, since: datetime | None = None
) -> list[TakenFile]:
    """The files the pipeline has taken, in batch order: only those of run `run_id` (the
    run that accounted them), or of batches committed at or after `since` (UTC), if given."""
    found: list[TakenFile] = []
    for account in accounts_after(ledger):
        if run_id is not None and account.get("run_id") != run_id:
            continue
        committed = account.get("committed_at")
        if since is not None and (committed is None or datetime.fromisoformat(committed) < since):
            continue
        found += files_of(account, checkpoint_log)
    return found


def files_of(account: dict[str, Any], checkpoint_log: CheckpointLog) -> list[TakenFile]:
    """The files of one batch account."""
    batch = {
        "batch_id": account["batch_id"],
        "run_id": account.get("run_id"),
        "committed_at": account.get("committed_at"),
    }
    if account.get("files") is not None:
        return [
            TakenFile(
                path=f["path"],
                size_bytes=f["size_bytes"],
                modified_at=ms_to_iso(f["modified_ms"]),
                **batch,
                **{count: f.get(count, 0) if count == "filtered_rows" else f[count] for count in FileAccount.COUNTS},
                rescued_rows=f.get("rescued_rows", 0),
                violations=f.get("violations", {}),
            )
            for f in account["files"]
        ]
    # Accounted before accounts named their files: the checkpoint still may.
    listed: dict[str, int] = {}
    try:
        for source in range(2):  # a join's second source; none for other patterns
            listed |= checkpoint_log.source_entries(account["batch_id"], source)
    except (FileNotFoundError, StorageError):
        pass  # Spark no longer keeps the batch's offsets (the last 100 batches by default)
    unknown = dict.fromkeys([*FileAccount.COUNTS, "rescued_rows", "violations"])
    return [
        TakenFile(path=path, size_bytes=None, modified_at=ms_to_iso(ms), **batch, **unknown)
        for path, ms in listed.items()
    ]


def table_files(checkpoint_log: CheckpointLog) -> list[TableFile] | None:
    """The files the output table holds: what Spark reads, and what a plain reader of the
    folder should read. None if part of the sink log is missing."""
    committed = checkpoint_log.committed_output_files()
    if committed is None:
        return None
    return [
        TableFile(path=path, size_bytes=entry["size"], modified_at=ms_to_iso(entry.get("modificationTime")))
        for path, entry in sorted(committed.items())
    ]
