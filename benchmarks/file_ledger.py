"""How long the file ledger (`python -m jobs files`) takes with 100,000 files taken.

    .venv/bin/python -m benchmarks.file_ledger [--files 100000] [--rounds 3]

Writes a pipeline's accounts as runs write them (jobs/accounting/batches.py), for the same
number of files in a few batch shapes (few big batches; many small ones), then times the
whole command, as a user runs it: the JSON listing, the text table, and a filter by run.
Prints one line per shape. Figures, not assertions: compare them between versions.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jobs.accounting.accounts import BatchAccount, FileAccount
from jobs.accounting.checkpoint import ms_to_iso
from jobs.accounting.ledger import Ledger
from jobs.lake.layout import Locations

SHAPES = ((100, 1000), (1000, 100), (10_000, 10))  # (batches, files per batch)
START_MS = 1_690_000_000_000


def write_ledger(root: str, batches: int, per_batch: int) -> None:
    """Accounts for `batches` batches of `per_batch` files each, one run per 10 batches."""
    locations = Locations.resolve("clickstream", root=root)
    ledger = Ledger(locations.ledger)
    for b in range(batches):
        files = [
            FileAccount(
                path=f"file://{locations.landing}/dt=2023-07-30/events-{b:05d}-{i:04d}.json",
                size_bytes=150_000,
                modified_ms=START_MS + b * 60_000 + i,
                input_rows=1000,
                used_rows=990,
                quarantined_rows=6,
                late_rows_dropped=4,
            )
            for i in range(per_batch)
        ]
        account = BatchAccount(
            batch_id=b,
            late_watermark_ms=START_MS,
            input_files=per_batch,
            input_rows=1000 * per_batch,
            used_rows=990 * per_batch,
            quarantined_rows=6 * per_batch,
            late_rows_dropped=4 * per_batch,
            output_rows=100,
            run_id=f"run-{b // 10:05d}",
            committed_at=ms_to_iso(START_MS + b * 60_000 + 30_000),
            files=files,
        )
        ledger.write_account(b, account.model_dump())


def timed(command: list[str], rounds: int) -> float:
    """Median wall time of the whole command, in seconds."""
    times = []
    for _ in range(rounds):
        started = time.monotonic()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.monotonic() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    files_cmd = [sys.executable, "-m", "jobs", "files", "clickstream"]
    print(f"python -m jobs files, {args.files:,} files taken, median of {args.rounds}:")
    for batches, _ in SHAPES:
        per_batch = args.files // batches
        with tempfile.TemporaryDirectory() as root:
            started = time.monotonic()
            write_ledger(root, batches, per_batch)
            written = time.monotonic() - started
            ledger = Path(root, "checkpoints", "clickstream", "_pipeline", "accounting")
            size_mib = sum(p.stat().st_size for p in ledger.iterdir()) / 2**20
            json_s = timed([*files_cmd, "--root", root, "--json"], args.rounds)
            text_s = timed([*files_cmd, "--root", root], args.rounds)
            run_s = timed([*files_cmd, "--root", root, "--run", "run-00003"], args.rounds)
        print(
            f"  {batches:>6,} batches x {per_batch:>5,} files ({size_mib:.0f} MiB of accounts, written in "
            f"{written:.1f} s): --json {json_s:.2f} s, text {text_s:.2f} s, --run {run_s:.2f} s"
        )


if __name__ == "__main__":
    main()
