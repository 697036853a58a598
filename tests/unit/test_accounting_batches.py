"""A run's accounts as the query commits batches (jobs/accounting/batches.py), with the
accounting, the checkpoint's log, the ledger and the lock as fakes: which batches are
accounted when, stored when, and reported once."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from jobs.accounting.accounts import BatchAccount
from jobs.accounting.batches import Accounting
from jobs.run.report import RunReport


class Log:
    def __init__(self, committed):
        self.committed = committed

    def committed_batches(self):
        return list(self.committed)


class Ledger:
    def __init__(self):
        self.accounts = {}

    def write_account(self, batch_id, account):
        self.accounts[batch_id] = account


class Lock:
    def ensure_held(self):
        pass


def account(batch_id: int) -> BatchAccount:
    return BatchAccount(
        batch_id=batch_id, late_watermark_ms=0, input_files=1, input_rows=3, used_rows=3,
        quarantined_rows=0, late_rows_dropped=0, output_rows=1,
    )  # fmt: skip


def accountant(committed_before: list[int], store_as_it_goes: bool = False, before_store=lambda: None):
    log, ledger, calls = Log(committed_before), Ledger(), []

    def account_batches(batch_ids, *, store, seen):
        # (batches, stored, those of them whose metrics from the query's progress were handed over)
        calls.append((list(batch_ids), store, [b for b in batch_ids if b in seen]))
        before_store()
        for b in batch_ids:
            if store:
                ledger.write_account(b, account(b).model_dump())
        return [account(b) for b in batch_ids]

    report = RunReport(run_id="r", pipeline="p", trigger="available-now", started_at="2026-11-23T00:00:00+00:00")
    run = SimpleNamespace(checkpoint_log=log, ledger=ledger, lock=Lock())  # the parts of a RunContext it uses
    accounting = Accounting(account_batches, run, report.add_batches, store_as_it_goes=store_as_it_goes)
    return accounting, log, ledger, calls, report


def seen(*batch_ids: int) -> dict:
    return {b: {"lines_read": [3]} for b in batch_ids}


def test_batches_seen_are_accounted_beside_the_query_and_stored_when_it_ends():
    accounting, log, ledger, calls, report = accountant([0, 1])  # committed by earlier runs
    log.committed += [2, 3]
    accounting.follow(seen(2, 3))
    accounting.wait()
    assert calls == [([2, 3], False, [2, 3])] and ledger.accounts == {}  # a kill now claims nothing
    accounting.finish(seen(2, 3))
    assert sorted(ledger.accounts) == [2, 3] and len(calls) == 1
    assert (report.batch_ids, report.input_rows) == ([2, 3], 6)


def test_a_batch_whose_progress_was_not_seen_is_accounted_at_the_end_with_those_after_it():
    accounting, log, ledger, calls, report = accountant([])
    log.committed += [0, 1, 2]
    accounting.follow(seen(1, 2))  # batch 0's progress was missed
    accounting.wait()
    assert calls == []
    accounting.finish(seen(1, 2))
    # Stored; batch 0 read again (no count at hand), batches 1 and 2 with the query's counts.
    assert calls == [([0, 1, 2], True, [1, 2])]
    assert sorted(ledger.accounts) == [0, 1, 2]
    assert report.batch_ids == [0, 1, 2]


def test_a_run_that_goes_on_until_stopped_stores_its_accounts_as_it_goes():
    accounting, log, ledger, calls, report = accountant([], store_as_it_goes=True)
    log.committed += [0]
    accounting.follow(seen(0))
    accounting.wait()
    assert calls == [([0], True, [0])] and sorted(ledger.accounts) == [0] and report.batch_ids == [0]
    accounting.finish(seen(0))
    assert report.batch_ids == [0]  # reported once


def test_a_run_stopped_while_it_stores_an_account_claims_it_in_its_report():
    storing, go_on = threading.Event(), threading.Event()

    def slow_store():
        storing.set()
        go_on.wait(5)

    accounting, log, ledger, _, report = accountant([], store_as_it_goes=True, before_store=slow_store)
    log.committed += [0]
    accounting.follow(seen(0))
    storing.wait(5)  # the run is stopped (or fenced) now, mid-store
    threading.Timer(0.2, go_on.set).start()
    accounting.settle()
    assert sorted(ledger.accounts) == [0] and report.batch_ids == [0]
