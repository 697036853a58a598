"""Deterministic card transactions for spending_sessions, landed the way producers land them.

    spending_data.generate(FOLDER, events=1_000_000, files=100, users=100_000)   (make bench's sizing)

Each file is newline-delimited JSON (userId, transactionId, transactionTime, amount) covering
its slice of one day, files in event-time order, modification times one second apart. With the
defaults each user pays about ten times a day, most an hour or more apart: tens of thousands
of sessions are open in the processor's state at any time. The same arguments give the same bytes.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path

from benchmarks.clickstream_data import SPAN, START, write_day


def generate(folder: Path, events: int = 1_000_000, files: int = 100, users: int = 100_000, seed: int = 7) -> Path:
    """Write the files into `folder` (skipped when they are already there); returns the folder."""
    rng = random.Random(seed)
    per_file = events // files
    made = {"events": per_file * files, "files": files, "users": users, "seed": seed}
    return write_day(folder, "transactions", files, lambda number: _lines(number, files, per_file, users, rng), made)


def _lines(number: int, files: int, per_file: int, users: int, rng: random.Random) -> list[str]:
    """The transactions of file `number` of `files`, in time order within its slice of the day."""
    base = START + SPAN * number / files
    slice_s = SPAN.total_seconds() / files
    moments = sorted(base + timedelta(seconds=rng.random() * slice_s) for _ in range(per_file))
    return [
        json.dumps(
            {
                "userId": f"user{rng.randrange(users)}",
                "transactionId": f"t{number}-{i}",
                "transactionTime": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "amount": round(rng.uniform(1, 200), 2),
            }
        )
        for i, moment in enumerate(moments)
    ]
