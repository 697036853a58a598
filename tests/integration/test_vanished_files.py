"""A landed file removed before its batch was accounted (retention, archiving, a producer's
clean-up) never blocks the pipeline: the run goes on, names the file, and counts what it
can; the table stays what an uninterrupted run wrote."""

from __future__ import annotations

from pathlib import Path

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger
from jobs.lake.layout import join
from tests.helpers import event, land_in_order, run_pipeline, table_rows

FILES = {
    "f0.json": [event("u1", "2023-07-30T10:00:10Z"), event("u2", "2023-07-30T10:00:20Z")],
    "f1.json": [event("u1", "2023-07-30T10:01:10Z"), "not json", event("u3", "2023-07-30T10:01:30Z")],
    "f2.json": [event("u2", "2023-07-30T10:00:50Z")],  # moves no watermark: no batch after its own
}


def _as_after_a_kill(locations, batches: list[int], uncommitted: list[int] = ()) -> None:
    """The checkpoint as a run killed after committing `batches` leaves it (not accounted),
    and, for `uncommitted` (the last batch), killed while it ran, before its output committed."""
    for b in batches:
        Path(join(locations.ledger, "accounting", str(b))).unlink()
    for b in uncommitted:
        for log in (join(locations.checkpoint, "commits"), join(locations.output, "_spark_metadata")):
            Path(log, str(b)).unlink()
            Path(log, f".{b}.crc").unlink(missing_ok=True)  # Hadoop's checksum beside it


def test_a_file_gone_before_its_batch_was_accounted_is_named_and_the_run_goes_on(spark, clickstream, locations, caplog):
    land_in_order(locations.landing, FILES)
    first = run_pipeline(spark, clickstream, locations, max_files_per_trigger=1)  # f0, f1, f2
    table = table_rows(spark, locations.output)
    assert first.batch_ids == [0, 1, 2]
    _as_after_a_kill(locations, [1, 2])
    (Path(locations.landing) / "f1.json").unlink()
    caplog.clear()

    report = run_pipeline(spark, clickstream, locations)

    assert (report.status, report.recovered_batch_ids) == ("succeeded", [1, 2])
    assert [Path(uri).name for uri in report.missing_files] == ["f1.json"]
    assert (report.input_rows, report.used_rows, report.quarantined_rows) == (1, 1, 0)  # f2's only: f1's are unknown
    assert any("1 landed file(s) gone before they were accounted: f1.json" in line for line in caplog.messages)
    assert table_rows(spark, locations.output) == table  # exactly once, as Spark committed it
    taken = taken_files(Ledger(locations.ledger), CheckpointLog.of(locations))
    assert [(Path(f["path"]).name, f["input_rows"]) for f in taken] == [
        ("f0.json", 2),
        ("f1.json", None),
        ("f2.json", 1),
    ]


def test_a_file_of_the_batch_in_flight_gone_before_the_rerun_does_not_fail_every_run(spark, clickstream, locations):
    land_in_order(locations.landing, FILES)
    run_pipeline(spark, clickstream, locations, max_files_per_trigger=1)
    table = table_rows(spark, locations.output)
    # Killed as batch 2, the last, ran; then f2 removed. Spark redoes batch 2 from its offsets.
    _as_after_a_kill(locations, [2], uncommitted=[2])
    (Path(locations.landing) / "f2.json").unlink()

    report = run_pipeline(spark, clickstream, locations)
    again = run_pipeline(spark, clickstream, locations)

    assert (report.status, [Path(uri).name for uri in report.missing_files]) == ("succeeded", ["f2.json"])
    assert (report.batch_ids, report.input_rows) == ([2], 0)  # Spark redid batch 2 without it
    assert table_rows(spark, locations.output) == table
    assert (again.status, again.batches) == ("succeeded", 0)
