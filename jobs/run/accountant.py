"""A run's accounts: batches accounted as the query commits them, stored, and reported.

The runner's loop hands the accountant the batches whose progress it saw; the accountant
accounts them beside the query, one call at a time on a thread of its own, so that the loop
keeps answering stop requests and checking the lease while a slow store serves the
accounting (jobs/run/accounting.py does the accounting itself). A run that ends by itself
(available-now, once) stores those accounts in the ledger when it ends, with its report: a
run killed before that claims none of them, and the next run accounts those batches again.
A run that goes on until stopped (processing-time) stores them as it goes.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from jobs.lake.locks import CheckpointLock, LeaseLost, S3Lease
from jobs.run.checkpoint import CheckpointLog
from jobs.run.ledger import Ledger
from jobs.run.report import BatchAccount, RunReport, tied_files

# (batch ids, whether to store the accounts in the ledger, the metrics of the batches whose
# progress was seen) -> their accounts (jobs/run/accounting.py `account_batches`)
AccountBatches = Callable[[list[int], bool, dict[int, dict[str, Any]]], list[BatchAccount]]


class AccountingFailed(RuntimeError):
    """Accounting beside the query failed: the run failed (the query may have been fine)."""


class Accountant:
    def __init__(
        self,
        account_batches: AccountBatches,
        log: CheckpointLog,
        ledger: Ledger,
        lock: CheckpointLock | S3Lease,
        report: RunReport,
        store_as_it_goes: bool,
    ):
        self._account_batches = account_batches
        self._log, self._ledger, self._lock, self._report = log, ledger, lock, report
        self._store_as_it_goes = store_as_it_goes
        self.accounted_through = max(log.committed_batches(), default=-1)
        self._accounts: list[BatchAccount] = []  # reported
        self._unstored: list[BatchAccount] = []  # accounted beside the query, not yet in the ledger
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def account(self, batch_ids: list[int], seen: dict[int, dict[str, Any]] | None = None) -> None:
        """Account these committed batches now (`seen`: the metrics of those whose progress
        was seen), store and report them."""
        self._reported(self._account_batches(batch_ids, True, seen or {}))
        self.accounted_through = max([self.accounted_through, *batch_ids])

    def follow(self, seen: dict[int, dict[str, Any]]) -> None:
        """From the runner's loop: account the batches committed since, whose progress was
        seen (`seen`: the metrics of each), beside the query, unless a call is under way."""
        self._raise_failure()
        busy = self._thread is not None and self._thread.is_alive()
        if busy or not any(b > self.accounted_through for b in seen):
            return
        self._thread = threading.Thread(target=self._beside, args=(dict(seen),), name="accounting", daemon=True)
        self._thread.start()

    def _beside(self, seen: dict[int, dict[str, Any]]) -> None:
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

    def finish(self, seen: dict[int, dict[str, Any]]) -> None:
        """After the query: once the call under way (if any) is done, account the rest of
        what was seen, store everything accounted beside the query, then account (and
        store) every committed batch left: those whose progress was not seen, and the ones
        after them, read again where their counts are not at hand."""
        self.wait()
        self._raise_failure()
        self._lock.check()  # no accounting written by a run that lost its lease
        self._account_seen(seen)
        for account in self._unstored:
            self._ledger.write_account(account.batch_id, account.model_dump())
        self._reported(self._unstored)
        self._unstored = []
        left = [b for b in self._log.committed_batches() if b > self.accounted_through]
        if left:
            self.account(left, seen)

    def _account_seen(self, seen: dict[int, dict[str, Any]]) -> None:
        after = self.accounted_through
        if not any(b > after for b in seen):
            return
        committed = [b for b in self._log.committed_batches() if b > after]
        # In order: a batch whose progress was not seen waits for `finish`, and so do those after it.
        new = list(itertools.takewhile(seen.__contains__, committed))
        if not new:
            return
        self._lock.check()
        accounts = self._account_batches(new, self._store_as_it_goes, seen)
        if self._store_as_it_goes:
            self._reported(accounts)
        else:
            self._unstored += accounts
        self.accounted_through = new[-1]

    def _reported(self, accounts: list[BatchAccount]) -> None:
        self._report.add_batches(accounts)
        self._accounts += accounts
        self._report.tied_files = tied_files(self._accounts)
