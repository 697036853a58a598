"""`python -m jobs profile` on real data (issue 75): a pipeline proposed from a landing runs on
what landed there as it was written, and its proposed suite passes. Three thousand GH Archive
events (../shared/corpus/: nested, two hundred kinds of fields) and the clickstream samples (a
cut-off line, a time that is no time, a missing field). Each table against the lines, counted
here with json."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from demo import samples
from jobs import declare
from jobs.cli import main
from jobs.lake.layout import Locations
from jobs.validate.validation import validate_run
from tests.helpers import land_in_order, run_pipeline

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "gharchive_2015-01-01" / "gz"
GH_LINES = 3000


def _proposed_and_run(spark, tmp_path, monkeypatch, capsys, name: str, files: dict[str, list[str]]):
    """Land the files, profile the landing, run the proposed pipeline once: its report,
    validation, table rows and what profile said."""
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(tmp_path / "pipelines"))
    monkeypatch.setenv("JOBS_EXPECTATIONS_DIR", str(tmp_path / "expectations"))
    locations = Locations.resolve(name, root=str(tmp_path / "root"))
    land_in_order(locations.landing, files)
    assert main(["profile", locations.landing, "--name", name]) == 0
    said = capsys.readouterr().out
    print(said)
    pipeline = declare.load(name)
    report = run_pipeline(spark, pipeline, locations)
    validation = validate_run(spark, pipeline, locations, report)  # as `python -m jobs run` validates it
    failed = [check.message for check in validation.checks if check.success is False]
    return report, validation, failed, said, locations


@pytest.mark.skipif(not CORPUS.exists(), reason="the GH Archive sample is not on this machine")
def test_a_pipeline_proposed_from_gh_archive_events_runs_and_its_suite_passes(spark, tmp_path, monkeypatch, capsys):
    with gzip.open(CORPUS / "2015-01-01-0.json.gz", "rt", encoding="utf-8") as hour:
        lines = [line.rstrip("\n") for _, line in zip(range(GH_LINES), hour, strict=False)]
    report, validation, failed, said, locations = _proposed_and_run(
        spark, tmp_path, monkeypatch, capsys, "gh_events", {"2015-01-01-0.json": lines}
    )
    assert "event time: created_at (iso8601)" in said
    assert report.status == "succeeded" and report.rows_balance, report.summary()
    assert (report.input_rows, report.quarantined_rows, report.output_rows) == (GH_LINES, 0, GH_LINES)
    assert validation.status == "passed", failed
    events = [json.loads(line) for line in lines]
    written = {(row.id, row.type) for row in spark.read.parquet(locations.output).select("id", "type").collect()}
    assert written == {(e["id"], e["type"]) for e in events}


def test_a_pipeline_proposed_from_the_clickstream_samples_runs_and_its_suite_passes(
    spark, tmp_path, monkeypatch, capsys
):
    files = {name: lines for arrival in samples.clickstream_arrivals() for name, lines in arrival.items()}
    report, validation, failed, said, locations = _proposed_and_run(
        spark, tmp_path, monkeypatch, capsys, "clicks", files
    )
    assert "event time: eventtimestamp (iso8601)" in said
    lines = [line for file in files.values() for line in file]
    parsed = [json.loads(line) for line in lines if _json_object(line)]
    timed = [e for e in parsed if e["eventtimestamp"][:4].isdigit()]  # '30/07/2023 10:06' is no ISO time
    assert report.status == "succeeded" and report.rows_balance, report.summary()
    assert (report.input_rows, report.output_rows) == (len(lines), len(timed))
    assert report.quarantined_rows == len(lines) - len(timed)  # the cut-off line, 'not json at all', the bad time
    assert validation.status == "passed", failed
    written = [row.event_id for row in spark.read.parquet(locations.output).select("event_id").collect()]
    assert sorted(written, key=str) == sorted((e.get("event_id") for e in timed), key=str)


def _json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
