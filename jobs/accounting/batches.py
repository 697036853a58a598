"""When a run's batches are accounted and when their accounts are stored.

`account_batches` accounts committed batches: each batch's counts as the query made them
(jobs/flow/tally.py), or, when those are not at hand or do not add up, as reading its files
again makes them (jobs/accounting/read_again.py); the account itself is jobs/accounting/accounts.py. The
quarantined records of a batch are written to <quarantine>/batch_id=N/ (file, line number,
the line, reason and detail, and the run that accounted them), replacing whatever an
interrupted earlier attempt wrote there, and only then is the batch's account stored:
accounting a batch twice gives the same files and the same numbers.

`Accounting` decides when. The runner's loop hands it the batches whose progress it
saw; it accounts them beside the query, one call at a time on a thread of its own, so that
the loop keeps answering stop requests and checking the lease while a slow store serves
the accounting. A run that ends by itself (available-now, once) stores those accounts in
the ledger when it ends, with its report: a run killed before that claims none of them,
and the next run accounts those batches again. A run that goes on until stopped
(processing-time) stores them as it goes.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

from jobs.accounting.accounts import BatchAccount, BatchRead, batch_account, counts_that_add_up
from jobs.accounting.checkpoint import ms_to_iso
from jobs.accounting.lines import lines_before
from jobs.accounting.long_lines import count_passed_over
from jobs.accounting.read_again import read_again
from jobs.accounting.run_view import RunView
from jobs.flow.patterns import pattern_of
from jobs.flow.tally import FileCount, Files
from jobs.lake import fs
from jobs.lake.layout import join
from jobs.lake.locks import LeaseLost

Metrics = dict[int, dict[str, Any]]  # batch -> what Spark counted of it (jobs/run/progress.py)


def account_batches(
    run: RunView, batch_ids: list[int], *, store: bool, seen: Metrics | None = None
) -> list[BatchAccount]:
    """Account each committed batch not yet accounted; returns the accounts of `batch_ids`.
    With `store=False` the accounts are not stored in the ledger: the caller does that.
    `seen`: the metrics of the batches whose progress this run saw, kept in the ledger
    first, for a run that stops before it stores their accounts; the metrics of the
    others are read from the ledger."""
    seen, ledger = seen or {}, run.ledger
    todo = sorted(set(batch_ids) - ledger.accounted_batches())
    committed_ms = run.checkpoint_log.commit_times_ms() if todo else {}
    accounts = {}
    for b in todo:
        account = _account_batch(run, b, seen.get(b))
        account.committed_at = ms_to_iso(committed_ms.get(b))
        if store:
            ledger.write_account(b, account.model_dump())
        accounts[b] = account
    return [accounts.get(b) or BatchAccount.model_validate(ledger.read_account(b)) for b in batch_ids]


def _account_batch(run: RunView, batch_id: int, metrics: dict[str, Any] | None) -> BatchAccount:
    """One batch's account, its quarantined records written first."""
    checkpoint_log, pattern = run.checkpoint_log, pattern_of(run.pipeline)
    # Per source, the files the batch read (a stream-stream join reads two: sources/0 and 1).
    listed = [checkpoint_log.source_entries(batch_id, s) for s in range(len(pattern.sources))]
    counts = run.tally.take(batch_id)
    if metrics is not None and _read_nothing_of(counts, listed, metrics):
        metrics = None  # what Spark counted of the batch in this run is not the batch's
    if metrics is not None:
        run.ledger.write_metrics(batch_id, metrics)
    else:
        metrics = run.ledger.read_metrics(batch_id) or {}
    files, missing = counts_that_add_up(counts, listed, metrics.get("lines_read")), set()
    was_read_again = files is None
    if was_read_again:
        files, missing = read_again(run, batch_id, listed)
    missing |= _uncounted(files, listed)
    count_passed_over(files)  # lines too long for the reader: counted and quarantined here
    read = BatchRead(
        batch_id=batch_id,
        listed=listed,
        files=files,
        missing=missing,
        metrics=metrics,
        late_ms=checkpoint_log.late_watermark_ms(batch_id),
    )
    sink_files = checkpoint_log.sink_files(batch_id)
    output_rows, nulls = _output_counts(sink_files)
    account = batch_account(pattern, read, output_rows=output_rows, run_id=run.run_id, output_nulls=nulls)
    account.read_again = was_read_again
    _write_quarantine(join(run.locations.quarantine, f"batch_id={batch_id}"), listed, files, run.run_id)
    return account


def _output_counts(sink_files: list[str] | None) -> tuple[int | None, dict[str, int] | None]:
    """The rows the batch wrote, and per top-level column its nulls, from the files' footers."""
    if sink_files is None:
        return None, None
    rows, nulls = 0, {}
    for path in sink_files:
        in_file, nulls_in_file = fs.parquet_counts(path)
        rows += in_file
        for column, count in nulls_in_file.items():
            nulls[column] = nulls.get(column, 0) + count
    return rows, nulls


def _read_nothing_of(counts: Files, listed: list[dict[str, int]], metrics: dict[str, Any]) -> bool:
    """Whether the query ran the batch without reading a line of its files, which are not
    all empty: its sink skipped the batch, having its output already from a run that died
    between the sink's commit and Spark's. Its files are read again, and what Spark counted
    (none dropped as duplicates or late) is not the batch's."""
    if counts or any(metrics["lines_read"]):
        return False
    return any(fs.size(path) != 0 for entries in listed for path in entries)


def _uncounted(files: Files, listed: list[dict[str, int]]) -> set[str]:
    """The files of the batch no line was counted of: an empty file (its size is added to
    `files`), or one gone before the batch ran (returned: its rows, if any, are unknown)."""
    gone = set()
    for path in (path for entries in listed for path in entries if path not in files):
        size = fs.size(path)
        if size is None:
            gone.add(path)
        else:
            files[path] = FileCount(size_bytes=size)
    return gone


_RECORD = msgspec.json.Encoder()


def _write_quarantine(folder: str, listed: list[dict[str, int]], files: Files, run_id: str) -> None:
    """The batch's quarantined records, one JSON object a line, in file and line order."""
    records = []
    for path in (path for entries in listed for path in entries):
        count = files.get(path)
        before: dict[int, int] = {}  # lines of the blocks before a block, counted once each
        for q in sorted(count.quarantined if count else [], key=lambda q: (q.block_start, q.line_in_block)):
            if q.block_start and q.block_start not in before:
                before[q.block_start] = lines_before(path, q.block_start)
            record = {
                "source_file": path,
                "line_number": q.line_in_block + before.get(q.block_start, 0),
                "line": q.line,
                "reason": q.reason,
                "detail": q.detail,
                "run_id": run_id,
            }
            records.append(_RECORD.encode({k: v for k, v in record.items() if v is not None}))
    fs.remove_tree(folder)
    if records:
        fs.write_bytes(join(folder, "part-00000.json"), b"\n".join(records) + b"\n")


class AccountingFailed(RuntimeError):
    """Accounting beside the query failed: the run failed (the query may have been fine)."""


class AccountBatches(Protocol):
    """`account_batches` with the run given: (batch ids, store?, the metrics seen) -> accounts."""

    def __call__(self, batch_ids: list[int], *, store: bool, seen: Metrics) -> list[BatchAccount]: ...


class Accounting:
    """A run's accounting: which batches are accounted when, stored when, and reported once
    (`report`: what the run does with accounts, e.g. add them to its run report)."""

    def __init__(
        self,
        account: AccountBatches,
        run: RunView,
        report: Callable[[list[BatchAccount]], None],
        *,
        store_as_it_goes: bool,
    ):
        self._account_batches = account
        self._checkpoint_log, self._ledger, self._lock = run.checkpoint_log, run.ledger, run.lock
        self._report = report
        self._store_as_it_goes = store_as_it_goes
        self.accounted_through = max(self._checkpoint_log.committed_batches(), default=-1)
        self._unstored: list[BatchAccount] = []  # accounted beside the query, not yet in the ledger
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def account(self, batch_ids: list[int], seen: Metrics | None = None) -> None:
        """Account these committed batches now (`seen`: the metrics of those whose progress
        was seen), store and report them."""
        self._reported(self._account_batches(batch_ids, store=True, seen=seen or {}))
        self.accounted_through = max([self.accounted_through, *batch_ids])

    def follow(self, seen: Metrics) -> None:
        """From the runner's loop: account the batches committed since, whose progress was
        seen (`seen`: the metrics of each), beside the query, unless a call is under way."""
        self._raise_failure()
        busy = self._thread is not None and self._thread.is_alive()
        if busy or not any(b > self.accounted_through for b in seen):
            return
        self._thread = threading.Thread(target=self._beside, args=(dict(seen),), name="accounting", daemon=True)
        self._thread.start()

    def _beside(self, seen: Metrics) -> None:
        try:
            self._account_seen(seen)
        except BaseException as error:  # noqa: BLE001 - raised in the runner's loop (follow, finish)
            self._error = error

    def wait(self) -> None:
        """Until the call under way, if any, is done."""
        if self._thread is not None:
            self._thread.join()

    def settle(self) -> None:
        """When the query ended early: a run that stores as it goes finishes the call under
        way, so that every account it stored is claimed by its report (and none twice)."""
        if self._store_as_it_goes:
            self.wait()

    def _raise_failure(self) -> None:
        if isinstance(self._error, LeaseLost):
            raise self._error  # the runner's fence
        if self._error is not None:
            raise AccountingFailed(str(self._error)) from self._error

    def finish(self, seen: Metrics) -> None:
        """After the query: once the call under way (if any) is done, account the rest of
        what was seen, store everything accounted beside the query, then account (and
        store) every committed batch left: those whose progress was not seen, and the ones
        after them, read again where their counts are not at hand."""
        self.wait()
        self._raise_failure()
        self._lock.ensure_held()  # no accounting written by a run that lost its lease
        self._account_seen(seen)
        for account in self._unstored:
            self._ledger.write_account(account.batch_id, account.model_dump())
        self._reported(self._unstored)
        self._unstored = []
        left = [b for b in self._checkpoint_log.committed_batches() if b > self.accounted_through]
        if left:
            self.account(left, seen)

    def _account_seen(self, seen: Metrics) -> None:
        after = self.accounted_through
        if not any(b > after for b in seen):
            return
        committed = [b for b in self._checkpoint_log.committed_batches() if b > after]
        # In order: a batch whose progress was not seen waits for `finish`, and so do those after it.
        new = list(itertools.takewhile(seen.__contains__, committed))
        if not new:
            return
        self._lock.ensure_held()
        accounts = self._account_batches(new, store=self._store_as_it_goes, seen=seen)
        if self._store_as_it_goes:
            self._reported(accounts)
        else:
            self._unstored += accounts
        self.accounted_through = new[-1]

    def _reported(self, accounts: list[BatchAccount]) -> None:
        self._report(accounts)
