"""Bench data from real code-host events: GH Archive's public timeline as templates.

    python -m benchmarks.github_data FOLDER [--events 150000] [--files 60]

The templates are the 26,480 real events of ../shared/corpus/gharchive_2015-01-01 (read from
there, never copied into the repository): every field as GitHub sent it (nested actors,
repositories, payloads with their commits, nulls, absent objects), each written again with
a fresh id and a fresh time, so that a backlog of any size is made of real shapes. Times
run over a day in landing order, a few seconds out of order within a file; 1% of events
are sent again (an events API's overlapping pages: the pipeline counts them once). The
same arguments always give the same bytes; files get modification times a second apart.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "gharchive_2015-01-01" / "gz"
START = datetime(2026, 11, 1, tzinfo=UTC)
SPAN = timedelta(days=1)
REPEATED = 0.01


def templates(corpus: Path = CORPUS) -> list[dict]:
    """The real events, in their files' order."""
    if not corpus.is_dir():
        raise SystemExit(f"the GH Archive corpus is not at {corpus} (../shared/corpus of the checkout)")
    events = []
    for path in sorted(corpus.glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            events += [json.loads(line) for line in lines if line.strip()]
    return events


def generate(folder: Path, events: int = 150_000, files: int = 60, seed: int = 23) -> Path:
    """Write the files into `folder` (skipped when they are there already); returns the folder."""
    done = folder / "_COMPLETE"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    real = templates()
    rng = random.Random(seed)
    per_file = events // files
    first = START.timestamp()
    sent: list[str] = []
    for number in range(files):
        lines = []
        for i in range(per_file):
            index = number * per_file + i
            if sent and rng.random() < REPEATED:
                lines.append(rng.choice(sent[-500:]))  # a page seen before, again
                continue
            event = dict(real[index % len(real)])
            moment = START + SPAN * index / events + timedelta(seconds=rng.uniform(-5, 5))
            event["id"] = str(20_000_000_000 + index)
            event["created_at"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
            line = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
            lines.append(line)
            sent.append(line)
        path = folder / f"events-{number:04d}.json"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.utime(path, (first + number, first + number))
    done.write_text(json.dumps({"events": events, "files": files, "templates": len(real)}))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--events", type=int, default=150_000)
    parser.add_argument("--files", type=int, default=60)
    args = parser.parse_args()
    print(generate(args.folder, args.events, args.files))


if __name__ == "__main__":
    main()
