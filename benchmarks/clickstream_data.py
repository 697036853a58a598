"""Deterministic clickstream events, landed the way producers land them.

    python -m benchmarks.clickstream_data FOLDER [--events 4000000] [--files 400]

Each file is newline-delimited JSON with the fields producers really send: event_id,
user_id, event, eventtimestamp, and two the pipeline ignores (page, session). Files
follow each other in event time (the backlog covers one day), as a producer catching up
would land them. About 1% of lines are cut off (malformed), 1% have no user (quarantined)
and 2% are eight hours behind their file's time (late once the watermark has moved on).
The same arguments always give the same bytes, and files get modification times one
second apart in landing order.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2023, 7, 30, tzinfo=UTC)
SPAN = timedelta(days=1)
KINDS = ("click", "view", "scroll", "purchase")
MALFORMED, NO_USER, LATE = 0.01, 0.01, 0.02


def file_lines(number: int, files: int, per_file: int, users: int, rng: random.Random) -> list[str]:
    """The lines of file `number` of `files`: events of its slice of the day."""
    base = START + SPAN * number / files
    slice_s = SPAN.total_seconds() / files
    lines = []
    for i in range(per_file):
        draw = rng.random()
        if draw < MALFORMED:
            lines.append('{"event_id": "cut", "user_id": ')
            continue
        moment = base + timedelta(seconds=rng.random() * slice_s)
        if draw < MALFORMED + LATE:
            moment -= timedelta(hours=8)
        record = {
            "event_id": f"e{number}-{i}",
            "user_id": f"user{rng.randrange(users)}",
            "event": rng.choice(KINDS),
            "eventtimestamp": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "page": f"/p/{rng.randrange(500)}",
            "session": rng.randrange(10**9),
        }
        if draw > 1 - NO_USER:
            del record["user_id"]
        lines.append(json.dumps(record))
    return lines


def generate(folder: Path, events: int = 4_000_000, files: int = 400, users: int = 10_000, seed: int = 42) -> Path:
    """Write the files into `folder` (skipped when they are already there); returns the folder."""
    rng = random.Random(seed)
    per_file = events // files
    made = {"events": per_file * files, "files": files, "users": users, "seed": seed}
    return write_day(folder, "events", files, lambda number: file_lines(number, files, per_file, users, rng), made)


def write_day(folder: Path, name: str, files: int, lines_of: Callable[[int], list[str]], made: dict) -> Path:
    """File `number` of `files` holds `lines_of(number)`, landed in order one second apart;
    `made` (what the files are made from) marks them complete: a second call writes nothing."""
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / "_COMPLETE"
    if done.exists():
        return folder
    for number in range(files):
        path = folder / f"{name}-{number:05d}.json"
        path.write_text("\n".join(lines_of(number)) + "\n")
        os.utime(path, (START.timestamp() + number, START.timestamp() + number))
    done.write_text(json.dumps(made))
    return folder


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--events", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=400)
    args = parser.parse_args()
    print(generate(args.folder, args.events, args.files))
