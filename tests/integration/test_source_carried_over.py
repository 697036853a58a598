"""A checkpoint of Spark's own file source, made by the code before the landing source and
left by a run killed in the middle (tests/fixtures/root_before_wave6: a batch committed and
not accounted, the next planned and not committed), is carried over in place by the landing
source on its first run: the committed batch accounted, the planned one redone from its own
file, the file never taken read once, the index built; the table equals the model."""

from __future__ import annotations

from pathlib import Path

from jobs.accounting.checkpoint import CheckpointLog
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.helpers import REPO, run_pipeline, table_rows
from tests.integration.test_stored_formats import restored
from tests.model import ClickstreamModel

FIXTURE = REPO / "tests" / "fixtures" / "root_before_wave6"
LANDED = ("a.json", "b.json", "c.json", "d.json", "e.json")  # in the order they landed


def test_a_killed_run_of_sparks_own_source_is_carried_over_exactly_once(spark, tmp_path, clickstream):
    root = restored(tmp_path, FIXTURE)
    locations = Locations.resolve(clickstream.name, root=str(root))
    day = root / "landing" / "clickstream" / "dt=2023-07-30"
    files = {name: (day / name).read_text().splitlines() for name in LANDED}
    before = load_reports(locations.runs)

    report = run_pipeline(spark, clickstream, locations)

    assert report.status == "succeeded" and report.rows_balance, report.summary()
    assert report.recovered_batch_ids == [4]  # committed by the killed run, accounted now
    assert report.batch_ids[:2] == [4, 5]  # then batch 5 redone as planned: d.json
    log = CheckpointLog.of(locations)
    assert [Path(p).name for p in log.source_files(5)] == ["d.json"]
    assert [Path(p).name for b in report.batch_ids[2:] for p in log.source_files(b)] == ["e.json"]
    # Every landed line counted once over all the runs: the killed run's batch 4 in this one.
    counted = sum(r.input_rows for r in before) + report.input_rows
    assert counted == sum(len(lines) for lines in files.values())
    assert Path(locations.checkpoint, "sources", "0", "folders", "version").exists()
    model = ClickstreamModel()
    model.run([files[name] for name in LANDED])
    assert table_rows(spark, locations.output) == model.rows()

    again = run_pipeline(spark, clickstream, locations)  # nothing new: nothing read again
    assert again.input_files == 0 and table_rows(spark, locations.output) == model.rows()
