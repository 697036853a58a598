"""Retention, as declared: landed files of accounted batches deleted or archived, never a
file a recovery could still need; output files past the table's retention leave both
Spark's sink log and the folder."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger
from jobs.declare.operations import Retention
from jobs.lake.layout import join
from jobs.run.retention import apply_retention
from tests.helpers import all_lines, assert_run_matches, event, land_in_order, run_context, run_pipeline, table_rows
from tests.model import ClickstreamModel

FIRST = {
    "dt=2023-07-30/a.json": [event("u1", "2023-07-30T10:00:10Z"), "not json"],
    "dt=2023-07-30/b.json": [event("u2", "2023-07-30T10:08:20Z")],
}
SECOND = {"dt=2023-07-31/c.json": [event("u1", "2023-07-30T10:20:00Z")]}


def _with(pipeline, **retention):
    return pipeline.model_copy(update={"retention": Retention(**retention)})


def _landed(locations) -> list[str]:
    return sorted(str(p.relative_to(locations.landing)) for p in Path(locations.landing).rglob("*.json"))


def test_landed_files_are_deleted_once_accounted_and_the_ledger_still_answers(spark, clickstream, locations, caplog):
    pipeline, model = _with(clickstream, landed="delete", landed_after=0), ClickstreamModel()
    land_in_order(locations.landing, FIRST)

    first = run_pipeline(spark, pipeline, locations)

    assert (first.retention.deleted, _landed(locations)) == (2, [])
    assert any("retention: 2 deleted landed file(s)" in line for line in caplog.messages)
    model.run([all_lines(FIRST)])
    land_in_order(locations.landing, SECOND)
    second = run_pipeline(spark, pipeline, locations)  # the source does not miss what was deleted
    assert_run_matches(second, model.run([all_lines(SECOND)]))
    assert second.retention.deleted == 1 and table_rows(spark, locations.output) == model.rows()
    # The ledger names every file, with its rows, after the files are gone.
    taken = taken_files(Ledger(locations.ledger), CheckpointLog.of(locations))
    assert [(Path(f["path"]).name, f["input_rows"]) for f in taken] == [("a.json", 2), ("b.json", 1), ("c.json", 1)]


def test_files_younger_than_the_retention_are_kept(spark, clickstream, locations):
    land_in_order(locations.landing, FIRST)
    report = run_pipeline(spark, _with(clickstream, landed="delete", landed_after="30 days"), locations)
    assert (report.retention.deleted, len(_landed(locations))) == (0, 2)


def test_archived_files_keep_their_folders_and_bytes(spark, clickstream, locations):
    land_in_order(locations.landing, FIRST)
    before = {name: (Path(locations.landing) / name).read_bytes() for name in FIRST}

    report = run_pipeline(spark, _with(clickstream, landed="archive", landed_after=0), locations)

    assert (report.retention.archived, report.retention.archive, _landed(locations)) == (2, locations.archive, [])
    assert {name: (Path(locations.archive) / name).read_bytes() for name in FIRST} == before


def test_retention_never_touches_a_batch_that_is_not_accounted(spark, clickstream, locations):
    files = {f"f{i}.json": [event(f"u{i}", f"2023-07-30T10:0{i}:00Z")] for i in range(3)}
    land_in_order(locations.landing, files)
    run_pipeline(spark, clickstream, locations, max_files_per_trigger=1)
    # As if the run had died after committing batch 2, before accounting it.
    Path(join(locations.ledger, "accounting", "2")).unlink()
    run = run_context(spark, _with(clickstream, landed="delete", landed_after=0), locations)

    done = apply_retention(run, now=datetime.now(UTC) + timedelta(days=1))

    assert (done.deleted, done.through_batch, _landed(locations)) == (2, 1, ["f2.json"])
    recovered = run_pipeline(spark, clickstream, locations)  # reads f2.json again, to account batch 2
    assert recovered.recovered_batch_ids == [2] and recovered.input_rows == 1
    later = apply_retention(run, now=datetime.now(UTC) + timedelta(days=1))
    assert (later.deleted, later.through_batch, _landed(locations)) == (1, 3, [])


def test_output_files_past_the_tables_retention_leave_the_log_and_the_folder(spark, clickstream, locations):
    pipeline = _with(clickstream, output_after="1 second")
    files = {f"f{i}.json": [event("u1", f"2023-07-30T1{i}:00:00Z")] for i in range(4)}  # each closes a window
    spark.conf.set("spark.sql.streaming.fileSink.log.compactInterval", "3")
    try:
        land_in_order(locations.landing, dict(list(files.items())[:2]))
        run_pipeline(spark, pipeline, locations, max_files_per_trigger=1)
        time.sleep(1.5)  # the first windows' files are now past the retention
        land_in_order(locations.landing, dict(list(files.items())[2:]))
        report = run_pipeline(spark, pipeline, locations, max_files_per_trigger=1)
    finally:
        spark.conf.unset("spark.sql.streaming.fileSink.log.compactInterval")

    # Spark's compaction dropped the old files from the log; the run removed them from the folder.
    assert report.expired_output_files_removed > 0 and report.uncommitted_files_removed == 0
    in_log = spark.read.parquet(locations.output).count()
    assert pq.read_table(locations.output).num_rows == in_log < 3


def test_quarantined_records_and_run_reports_leave_after_their_retention(spark, clickstream, locations):
    """By default the quarantine (whole raw lines) is kept 30 days, run reports and their
    validation results 90 (the newest run's always); before, both were kept forever."""
    land_in_order(locations.landing, FIRST)  # "not json" is quarantined in batch 0
    first = run_pipeline(spark, clickstream, locations)
    land_in_order(locations.landing, SECOND)
    second = run_pipeline(spark, clickstream, locations)
    for report in (first, second):
        (Path(locations.runs) / f"{report.run_id}.quality.json").write_text("{}")  # as a validation stores it
    run = run_context(spark, clickstream, locations)
    quarantined = Path(locations.quarantine) / "batch_id=0"
    assert quarantined.is_dir() and first.quarantined_rows == 1

    kept = apply_retention(run, now=datetime.now(UTC) + timedelta(days=29))
    assert (kept.quarantine_batches_removed, kept.runs_removed, quarantined.is_dir()) == (0, 0, True)
    month = apply_retention(run, now=datetime.now(UTC) + timedelta(days=31))
    assert (month.quarantine_batches_removed, month.runs_removed, quarantined.exists()) == (1, 0, False)
    quarter = apply_retention(run, now=datetime.now(UTC) + timedelta(days=91))
    assert quarter.runs_removed == 1 and "1 old run report(s) removed" in quarter.describe()
    assert sorted(p.name for p in Path(locations.runs).iterdir()) == [
        f"{second.run_id}.json",
        f"{second.run_id}.quality.json",
        "history",  # the event log: its rows past retention go at its next append (jobs/history/log.py)
    ]


def test_great_expectations_results_of_runs_past_retention_are_removed(spark, clickstream, locations):
    """Their sample values are what retention's `runs` is for: the validation removes GX's own
    results and Data Docs pages of validations older than the run reports kept."""
    from jobs.validate.validation import site_folder, validate_run

    pipeline = _with(clickstream, runs="1 second")
    land_in_order(locations.landing, FIRST)
    first = validate_run(spark, pipeline, locations, run_pipeline(spark, pipeline, locations))
    stored = Path(locations.quality) / "gx" / "uncommitted" / "validations" / "clickstream"
    assert [p.name for p in stored.iterdir()] == [f"run-{first.validation_id}"]
    time.sleep(1.1)
    land_in_order(locations.landing, SECOND)
    second = validate_run(spark, pipeline, locations, run_pipeline(spark, pipeline, locations))
    assert [p.name for p in stored.iterdir()] == [f"run-{second.validation_id}"]
    pages = site_folder(locations) / "validations" / "clickstream"
    assert not (pages / f"run-{first.validation_id}").exists()
