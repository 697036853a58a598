"""How long `python -m jobs history` takes over 10,000 runs, appended as runs append them.

    .venv/bin/python -m benchmarks.history [--runs 10000] [--pipelines 10] [--rounds 3]

Appends each run's row and its one batch's row to its pipeline's event log through the
writer the runs use (jobs/history/log.py: a version per append, compacted every 10; the
older runs 100 to an append, see `append_runs`), then times the whole command as a user runs it (the newest runs; a GROUP BY over every
run; the same with --since; the late tables), and the answer alone inside one process. Figures, not
assertions: compare them between versions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta

import pyarrow as pa
from deltalake import DeltaTable

from benchmarks.file_ledger import timed
from jobs.accounting.accounts import BatchAccount
from jobs.history import log, query, rows
from jobs.run.report import RunReport

GROUPED = "SELECT pipeline, count(*), avg(input_rows), max(quarantined_rows) FROM runs WHERE record = 'run' GROUP BY 1"


def append_runs(root: str, runs: int, pipelines: int, one_at_a_time: int) -> float:
    """`runs` runs spread over `pipelines` pipelines, an hour apart, each with one batch. The
    last `one_at_a_time` are appended as runs append them (a version each, compacted every
    `log.TIDY_EVERY` versions); the ones before, 100 to an append, then compacted: the layout
    runs appended one at a time leave (the compacted file, then the newest versions' small
    ones), in a fraction of the time. Returns the mean
    time of a run's two appends (its row, its batch's)."""
    start = datetime.now(UTC) - timedelta(hours=runs)
    pending: dict[str, tuple[list, list]] = {}
    appends: list[float] = []
    for number in range(runs):
        pipeline, started = f"p{number % pipelines:02d}", start + timedelta(hours=number)
        report, account = _run(number, pipeline, started)
        own_rows, own_batches = pending.setdefault(pipeline, ([], []))
        own_rows.append(rows.run_row(report))
        own_batches.append(rows.batch_rows(pipeline, [account]))
        if number == runs - one_at_a_time:  # where the runs before would have left their logs
            for folder in pending:
                for table in log.TABLES:
                    log._tidy(DeltaTable(log.location(f"{root}/runs/{folder}", table)), table, None)
        if number >= runs - one_at_a_time or len(own_rows) == 100:
            began = time.monotonic()
            log._append(f"{root}/runs/{pipeline}", "runs", pa.concat_tables(own_rows), None)
            log._append(f"{root}/runs/{pipeline}", "batches", pa.concat_tables(own_batches), None)
            if number >= runs - one_at_a_time:
                appends.append(time.monotonic() - began)
            own_rows.clear()
            own_batches.clear()
    return statistics.mean(appends) if appends else 0.0


def _run(number: int, pipeline: str, started: datetime) -> tuple[RunReport, BatchAccount]:
    report = RunReport(
        run_id=f"{started:%Y%m%dT%H%M%SZ}-{number:06x}",
        pipeline=pipeline,
        trigger="available-now",
        started_at=started.isoformat(),
        ended_at=(started + timedelta(seconds=20)).isoformat(),
        duration_s=20.0,
        status="succeeded",
        batches=1,
        input_rows=10_000 + number % 97,
        used_rows=9_900,
        quarantined_rows=number % 97,
    )
    account = BatchAccount(
        batch_id=number // 10,
        late_watermark_ms=int(started.timestamp() * 1000),
        input_files=1,
        input_rows=report.input_rows,
        used_rows=9_900,
        quarantined_rows=report.quarantined_rows,
        late_rows_dropped=0,
        output_rows=100,
        run_id=report.run_id,
        committed_at=report.ended_at,
    )
    return report, account


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--pipelines", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-at-a-time", type=int, default=90, help="the newest runs, appended as runs do")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        per_run = append_runs(root, args.runs, args.pipelines, args.one_at_a_time)
        command = [sys.executable, "-m", "jobs", "history", "--root", root]
        since = (datetime.now(UTC) - timedelta(days=7)).date().isoformat()
        listed = timed(command, args.rounds)
        grouped = timed([*command, "--sql", GROUPED], args.rounds)
        recent = timed([*command, "--since", since, "--sql", GROUPED], args.rounds)
        late = timed([*command, "--late"], args.rounds)
        start_only = timed([sys.executable, "-m", "jobs", "--help"], args.rounds)
        inside = []
        for _ in range(args.rounds):
            began = time.monotonic()
            query.connect(root).execute(GROUPED).fetchall()
            inside.append(time.monotonic() - began)
    print(
        f"python -m jobs history, {args.runs:,} runs of {args.pipelines} pipelines (a run's two appends "
        f"{per_run * 1000:.0f} ms), median of {args.rounds}: the newest 20 {listed:.2f} s, GROUP BY {grouped:.2f} s, "
        f"--since a week {recent:.2f} s, --late {late:.2f} s; the command line's own start {start_only:.2f} s; "
        f"the answer inside one process {statistics.median(inside):.2f} s"
    )


if __name__ == "__main__":
    main()
