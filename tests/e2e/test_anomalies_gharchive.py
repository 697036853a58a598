"""Anomalies over real data (issue 75): three hours of GH Archive events (../shared/corpus/),
split into small runs of the shipped github_activity pipeline, in landing order. The steady
replay flags nothing once judging starts; then a run whose input halves, one whose
quarantine share jumps (a twentieth of its lines cut short), one whose events come from ten
repositories (its distinct keys collapse) and one whose output's null share rises (its pushes
without a commit count) are each flagged on what changed, and only that.
What each run flagged is printed (`pytest -s`): the closing note's figures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from jobs import declare
from jobs.lake.layout import Locations
from tests.helpers import land_in_order, run_pipeline

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "gharchive_2015-01-01" / "gz"
HOURS = ["2015-01-01-0.json.gz", "2015-01-01-1.json.gz", "2015-01-01-15.json.gz"]
STEADY_RUNS = 14
MIN_RUNS = 8  # the default


def _lines() -> list[str]:
    lines = []
    for hour in HOURS:
        with gzip.open(CORPUS / hour, "rt", encoding="utf-8") as events:
            lines += [line.rstrip("\n") for line in events]
    return lines


def _in_ten_repositories(line: str) -> str:
    event = json.loads(line)
    event["repo"]["name"] = f"owner/repo-{int(event['id']) % 10}"
    return json.dumps(event)


def _without_commit_count(line: str) -> str:
    event = json.loads(line)
    if event.get("type") == "PushEvent":
        event["payload"].pop("size", None)
    return json.dumps(event)


@pytest.mark.skipif(not CORPUS.exists(), reason="the GH Archive sample is not on this machine")
def test_a_steady_replay_flags_nothing_and_each_change_is_flagged_alone(spark, tmp_path):
    pipeline = declare.load("github_activity")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path))
    lines = _lines()
    size = len(lines) // (STEADY_RUNS + 4)  # the steady runs, then the four that change one thing
    chunks = [lines[at : at + size] for at in range(0, size * (STEADY_RUNS + 4), size)]

    reports = {}

    def run(name: str, chunk: list[str]) -> list[str]:
        land_in_order(locations.landing, {f"{name}.json": chunk})
        report = reports[name] = run_pipeline(spark, pipeline, locations)
        assert report.status == "succeeded" and report.rows_balance, report.summary()
        print(
            f"\n{name}: {report.input_rows} in, {report.quarantined_rows} quarantined, {report.output_rows} written, "
            f"{len(report.anomalies)} anomalies {[a.describe() for a in report.anomalies]}"
        )
        return sorted(anomaly.metric for anomaly in report.anomalies)

    flagged = {f"run-{n:02d}": run(f"run-{n:02d}", chunk) for n, chunk in enumerate(chunks[:STEADY_RUNS])}
    assert flagged == {name: [] for name in flagged}  # judged from the 9th run on: nothing
    for n, chunk in enumerate(chunks[:STEADY_RUNS]):  # every event is used (none quarantined, late or twice)
        events = [json.loads(line) for line in chunk]
        keys = {(event["type"], event["repo"]["name"]) for event in events}
        assert reports[f"run-{n:02d}"].metrics["distinct_keys"] == pytest.approx(len(keys), rel=0.05)

    halved = run("halved", chunks[STEADY_RUNS][: size // 2])
    assert "input_rows" in halved and not [m for m in halved if "share" in m], halved

    cut = [line[: len(line) // 2] if n % 20 == 0 else line for n, line in enumerate(chunks[STEADY_RUNS + 1])]
    assert run("cut_short", cut) == ["quarantine_share", "quarantine_share:malformed_json"]

    # Before the pushes without a count: a window pipeline writes some of a run's windows in the
    # next run, once the watermark passes them, and their nulls with them.
    assert run("ten_repositories", [_in_ten_repositories(line) for line in chunks[STEADY_RUNS + 2]]) == [
        "distinct_keys"
    ]
    assert run("no_commit_counts", [_without_commit_count(line) for line in chunks[STEADY_RUNS + 3]]) == [
        "null_share:commits"
    ]
