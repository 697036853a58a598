"""A team's own pipeline over real data: three hours of GH Archive events (26,480, gzip, in
../shared/corpus/), declared with computed columns (a repository's owner, an event's
commits), a `where` (push events only), a key over a computed column and aggregates the
shipped shapes could not say (distinct pushers, a percentile). The table and the run's
account equal a model written here in plain Python from the same lines, without the
product's code: each line parsed with `json`, a record set aside as the declaration's types
say, the watermark of each batch (one file each) the newest event time before it less the
delay, and a window written once the last watermark passes its end."""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jobs import declare
from jobs.lake.layout import Locations
from tests.helpers import run_pipeline
from tests.model import fits

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "gharchive_2015-01-01" / "gz"
HOURS = ["2015-01-01-0.json.gz", "2015-01-01-1.json.gz", "2015-01-01-15.json.gz"]  # landed in this order
WINDOW, DELAY = timedelta(minutes=10), timedelta(minutes=5)
DECLARATION = {
    "name": "pushes_by_owner",
    "source": {
        "format": "json",
        "schema": {
            "type": "string",
            "actor": {"login": "string"},
            "repo": {"name": "string"},
            "payload": {"commits": [{"sha": "string"}]},
            "created_at": "string",
        },
        "required": ["type", "repo.name"],
        "event_time": {"column": "created_at", "format": "iso8601"},
    },
    "columns": {
        "owner": "lower(split(repo.name, '/')[0])",
        "commits": "greatest(size(payload.commits), 0)",
    },
    "where": "type = 'PushEvent'",
    "watermark": "5 minutes",
    "window": {"duration": "10 minutes"},
    "keys": ["owner"],
    "aggregates": [
        {"name": "pushes", "function": "count"},
        {"name": "pushers", "function": "approx_count_distinct", "column": "actor.login"},
        {"name": "commits", "function": "sum", "column": "commits"},
        {"name": "p90_commits", "expression": "percentile_approx(commits, 0.9)"},
    ],
    "output": {"format": "parquet"},
}


# The declaration's schema as the model's shapes (tests/model.py `fits`).
SHAPE = {
    "type": str,
    "actor": {"login": str},
    "repo": {"name": str},
    "payload": {"commits": [{"sha": str}]},
    "created_at": str,
}


def _usable(record: object) -> bool:
    """As the declaration's types and required fields say (a value of another type: quarantined)."""
    if not isinstance(record, dict) or not fits(record, SHAPE):
        return False
    repo = record.get("repo") or {}
    return record.get("type") is not None and repo.get("name") is not None and record.get("created_at") is not None


class Model:
    def __init__(self) -> None:
        self.windows: dict[tuple, list[tuple[str | None, int]]] = defaultdict(list)
        self.newest: datetime | None = None
        self.input = self.quarantined = self.filtered = self.late = 0

    def batch(self, lines: list[str]) -> None:
        watermark = self.newest - DELAY if self.newest else None
        for line in lines:
            self.input += 1
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if not _usable(record):
                self.quarantined += 1
                continue
            at = datetime.fromisoformat(record["created_at"].replace("Z", "+00:00"))
            self.newest = max(self.newest or at, at)  # every usable event moves it, filtered or not
            if record["type"] != "PushEvent":
                self.filtered += 1
                continue
            start = datetime.fromtimestamp(at.timestamp() // WINDOW.total_seconds() * WINDOW.total_seconds(), UTC)
            if watermark is not None and start + WINDOW <= watermark:
                self.late += 1
                continue
            owner = record["repo"]["name"].split("/")[0].lower()
            commits = len((record.get("payload") or {}).get("commits") or [])
            self.windows[(start, owner)].append(((record.get("actor") or {}).get("login"), commits))

    def table(self) -> dict[tuple, tuple]:
        closed = self.newest - DELAY
        rows = {}
        for (start, owner), pushes in self.windows.items():
            if start + WINDOW <= closed:
                commits = sorted(c for _, c in pushes)
                p90 = commits[math.ceil(0.9 * len(commits)) - 1]
                rows[(start, owner)] = (len(pushes), len({a for a, _ in pushes if a}), sum(commits), p90)
        return rows


@pytest.mark.skipif(not CORPUS.exists(), reason="the GH Archive sample is not on this machine")
def test_push_events_by_owner_over_real_events_equal_a_plain_python_model(spark, tmp_path):
    pipeline = declare.from_mapping(DECLARATION)
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    model = Model()
    landing = Path(locations.landing)
    landing.mkdir(parents=True)
    for number, name in enumerate(HOURS):
        shutil.copy(CORPUS / name, landing / name)
        stamp = 1_700_000_000 + number * 10  # landing order: each a batch of its own, in this order
        os.utime(landing / name, (stamp, stamp))
        with gzip.open(CORPUS / name, "rt", encoding="utf-8") as lines:
            model.batch(lines.read().splitlines())

    report = run_pipeline(spark, pipeline, locations, max_files_per_trigger=1)

    assert report.input_rows == model.input == 26_480
    assert (report.quarantined_rows, report.filtered_rows, report.late_rows_dropped) == (
        model.quarantined,
        model.filtered,
        model.late,
    )
    assert report.rows_balance and report.used_rows > 0 and report.filtered_rows > 0
    expected = model.table()
    written = {
        (row.window_start.replace(tzinfo=UTC), row.owner): row for row in spark.read.parquet(locations.output).collect()
    }
    assert written.keys() == expected.keys()
    for key, (pushes, pushers, commits, p90) in expected.items():
        row = written[key]
        assert (row.pushes, row.commits, row.p90_commits) == (pushes, commits, p90), key
        # An estimate (5% relative error by default): a few pushers per owner and window are
        # counted exactly but where two share a register of the sketch.
        assert abs(row.pushers - pushers) <= max(1, 0.05 * pushers), key
