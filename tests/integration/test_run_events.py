"""`execute(request)`, the one door of a run: the events it yields, as the run goes, and a
request that asks to quarantine a file the checkpoint has read, refused without a run."""

from __future__ import annotations

from jobs.exit_codes import ExitCode
from jobs.lake import fs
from jobs.launch import execute
from jobs.request import RunRequest
from jobs.run.events import BatchCommitted, Finished, ReportStored, Started
from tests.helpers import event, land_in_order


def test_a_run_s_events_come_in_order_and_add_up_to_its_report(spark, clickstream, locations):
    files = {
        "a.json": [event("u1", "2023-07-30T10:00:00Z"), event("u2", "2023-07-30T10:01:00Z")],
        "b.json": [event("u1", "2023-07-30T10:20:00Z")],
    }
    land_in_order(locations.landing, files)
    request = RunRequest("clickstream", locations, max_files_per_trigger=1, validate=False)

    said = list(execute(request, pipeline=clickstream, spark=spark))

    kinds = [type(e).__name__ for e in said]
    assert kinds[0] == "Started" and kinds[-2:] == ["ReportStored", "Finished"]
    assert set(kinds[1:-2]) == {"BatchCommitted"}
    started, stored, finished = said[0], said[-2], said[-1]
    batches = [e for e in said if isinstance(e, BatchCommitted)]
    assert isinstance(started, Started) and isinstance(stored, ReportStored) and isinstance(finished, Finished)
    assert (finished.status, finished.code) == ("succeeded", ExitCode.OK)
    assert finished.report.run_id == started.run_id and fs.exists(stored.uri)
    assert [b.batch_id for b in batches] == finished.report.batch_ids
    assert sum(b.input_rows for b in batches) == finished.report.input_rows == 3
    assert sum(b.output_rows for b in batches) == finished.report.output_rows

    read = f"{locations.landing}/a.json"
    refused = list(execute(RunRequest("clickstream", locations, quarantine_file=read, quarantine_reason="late")))
    (ended,) = refused  # refused before the run: no run, no report
    assert (ended.status, ended.code) == ("refused", ExitCode.REFUSED) and "read by a committed batch" in ended.error
