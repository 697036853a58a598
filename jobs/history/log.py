"""The event log's writer: two Delta tables per pipeline beside its run reports,

    <runs>/history/runs/       a row per run and per validation (jobs/history/rows.py)
    <runs>/history/batches/    a row per batch a run accounted

written with delta-rs (no Spark), under the pipeline's lock: one writer each, which a Delta
table in a bucket needs (S3 has no atomic rename; with one writer there is nothing to race).

Every `TIDY_EVERY` versions a table is compacted into one file, and the files no version
reads are removed; rows older than the pipeline's run report retention are deleted then, or
as soon as the log's statistics say a file holds one:
a reader of 10,000 runs opens a checkpoint and at most ten files. The log is a record, not
the run's outcome: a write that fails is a warning, never a failed run.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pyarrow as pa

from jobs.accounting.accounts import BatchAccount
from jobs.accounting.ledger import Ledger
from jobs.history import rows
from jobs.lake.layout import StorageError, is_s3, join, local_path

if TYPE_CHECKING:
    from jobs.declare import PipelineBase
    from jobs.lake.layout import Locations
    from jobs.run.report import RunReport

FOLDER = "history"
TABLES = ("runs", "batches")
TIDY_EVERY = 10  # versions; Delta's checkpoint interval too: a reader opens a checkpoint and at most 10 files
_TIME_COLUMN = {"runs": "started_at", "batches": "committed_at"}
_CREATED_WITH = {"delta.checkpointInterval": str(TIDY_EVERY)}

log = logging.getLogger(__name__)


def location(runs: str, table: str) -> str:
    """Where a pipeline's `table` (runs or batches) is, for the folder of its run reports."""
    return join(runs, FOLDER, table)


def record_run(report: RunReport, locations: Locations, retention_s: float | None) -> None:
    """Append a run's row and the rows of the batches it accounted, as the ledger has them
    (the caller holds the pipeline's lock). The log's first append brings in the runs whose
    reports were stored before it existed, oldest first."""
    from jobs.lake.delta import is_delta
    from jobs.run.report import load_reports

    reports = [report]
    try:
        if not is_delta(location(locations.runs, "runs")):
            reports = [*(r for r in load_reports(locations.runs) if r.run_id != report.run_id), report]
    except (StorageError, ValueError) as error:  # the earlier reports stay where they are
        log.warning("  history: the run reports stored before it could not be read (%s)", error)
    _append(locations.runs, "runs", pa.concat_tables([rows.run_row(r) for r in reports]), retention_s)
    ledger, accounted = Ledger(locations.ledger), []
    for batch in (b for r in reports for b in r.batch_ids):
        with contextlib.suppress(StorageError, ValueError):  # an account no longer kept: its run's row says it
            accounted.append(BatchAccount.model_validate(ledger.read_account(batch)))
    if accounted:
        _append(locations.runs, "batches", rows.batch_rows(report.pipeline, accounted), retention_s)


def record_validation(row: pa.Table, pipeline: PipelineBase, locations: Locations) -> None:
    """Append a validation's verdict, under the pipeline's lock (a run holding it is waited
    for, as maintenance waits)."""
    from jobs.lake.locks import AlreadyRunning, checkpoint_lock

    doing = "the history of a validation"
    try:
        with checkpoint_lock(locations.ledger, pipeline.name, doing, pipeline.orchestration.timeout_s):
            _append(locations.runs, "runs", row, pipeline.retention.runs_after_s)
    except AlreadyRunning as busy:
        log.warning("  history: this validation is not in it (%s); its result file has it", busy)


def storage(uri: str) -> tuple[str, dict[str, str] | None]:
    """delta-rs's name and settings for a table at `uri`, local or in a bucket."""
    if not is_s3(uri):
        # delta-rs 1.6.6 panics on a path with `[` (InvalidDomainCharacter), as a file URL too: caught below.
        return str(local_path(uri)), None
    from jobs.lake.delta import storage_options
    from jobs.settings import settings

    timeout = f"{settings().s3_timeout_s}s"  # bounded as every S3 call is: a stalled endpoint fails, never hangs
    bounded = {"timeout": timeout, "connect_timeout": timeout, "max_retries": str(settings().s3_attempts - 1)}
    # One writer at a time (the lock): delta-rs's copy-then-delete commit cannot race.
    return uri.replace("s3a://", "s3://", 1), {**storage_options(), **bounded, "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}


def _append(runs: str, table: str, data: pa.Table, retention_s: float | None) -> None:
    from deltalake import DeltaTable, write_deltalake
    from deltalake.exceptions import TableNotFoundError

    uri, options = storage(location(runs, table))
    try:
        try:
            written = DeltaTable(uri, storage_options=options)  # opened once: the write brings it up to date
        except TableNotFoundError:
            written = None
        write_deltalake(
            written or uri,
            data,
            mode="append",
            schema_mode="merge",
            storage_options=options,
            configuration=_CREATED_WITH,
        )
        if written is None:
            return
        cutoff = datetime.now(UTC) - timedelta(seconds=retention_s) if retention_s is not None else None
        if written.version() % TIDY_EVERY == 0 or _holds_before(written, table, cutoff):
            _tidy(written, table, cutoff)
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt | SystemExit):
            raise
        log.warning("  history: could not append to %s (%s); the run report has it", uri, error)


def run_rows(runs: str) -> list[dict] | None:
    """The log's rows of runs (not validations), oldest first; None while there is no log."""
    from deltalake import DeltaTable

    from jobs.lake.delta import is_delta

    if not is_delta(location(runs, "runs")):
        return None
    uri, options = storage(location(runs, "runs"))
    found = DeltaTable(uri, storage_options=options).to_pyarrow_table(filters=[("record", "=", "run")]).to_pylist()
    return sorted(found, key=lambda row: row["started_at"])


def _holds_before(table, name: str, cutoff: datetime | None) -> bool:
    """Whether a file of the table holds a row from before `cutoff` (its log's statistics, no file read)."""
    if cutoff is None:
        return False
    oldest = table.get_add_actions(flatten=True).column(f"min.{_TIME_COLUMN[name]}").to_pylist()
    return any(moment is not None and moment < cutoff for moment in oldest)


def _tidy(table, name: str, cutoff: datetime | None) -> None:
    """Rows from before `cutoff` deleted, the table compacted into few files, files no version has read for an hour removed."""
    if cutoff is not None:
        table.delete(f"{_TIME_COLUMN[name]} < '{cutoff.isoformat()}'")  # our own timestamp: no outside text
    table.optimize.compact()
    table.create_checkpoint()
    table.vacuum(retention_hours=1, dry_run=False, enforce_retention_duration=False)
    table.cleanup_metadata()
