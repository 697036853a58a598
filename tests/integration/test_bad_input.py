"""Unusable records are quarantined with file, line and reason, counted, and never fail a run."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

from jobs.run.checkpoint import CheckpointLog
from tests.helpers import event, land, run_pipeline

BAD_LINES = {
    '{"event_id": "x", "user_id": "u1", ': "malformed_json",
    "[1, 2, 3]": "not_a_json_object",
    event(None, "2023-07-30T10:00:20Z"): "missing_user_id",
    event("u1", None): "missing_eventtimestamp",
    event("u1", "30/07/2023"): "unparseable_eventtimestamp",
}


def quarantine_rows(quarantine: str) -> list[dict]:
    rows = []
    for path in sorted(Path(quarantine).glob("batch_id=*/*.json")):
        batch_id = int(path.parent.name.split("=")[1])
        rows += [{**json.loads(line), "batch_id": batch_id} for line in path.read_text().splitlines()]
    return rows


def test_every_kind_of_bad_record_is_quarantined_with_file_line_and_reason(spark, clickstream, locations, quiet):
    good = [event("u1", "2023-07-30T10:00:20Z"), event("u2", "2023-07-30T10:00:40Z")]
    land(locations.landing, {"mixed.json": [*good, *BAD_LINES], "empty.json": [], "only-bad.json": ["nope", "{"]})

    report = run_pipeline(spark, clickstream, locations, quiet)

    assert report.status == "succeeded"
    assert report.input_files == 3
    assert (report.input_rows, report.quarantined_rows, report.used_rows) == (9, 7, 2)
    rows = quarantine_rows(locations.quarantine)
    by_line = {r["line"]: (Path(r["source_file"]).name, r["reason"]) for r in rows}
    expected = {line: ("mixed.json", reason) for line, reason in BAD_LINES.items()}
    expected |= {"nope": ("only-bad.json", "malformed_json"), "{": ("only-bad.json", "malformed_json")}
    assert by_line == expected
    assert len(rows) == 7


def test_accounting_a_batch_again_rewrites_the_same_quarantine(spark, clickstream, locations, quiet):
    """A crash after a batch commits but before its accounting is repaired by the next
    run, which must not duplicate quarantined rows."""
    land(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:20Z"), "{bad", "[]"]})
    run_pipeline(spark, clickstream, locations, quiet)
    first = quarantine_rows(locations.quarantine)
    # Forget the accounting, as if the process had died right after the batch committed.
    shutil.rmtree(Path(locations.ledger) / "accounting")

    report = run_pipeline(spark, clickstream, locations, quiet)

    assert report.recovered_batch_ids == CheckpointLog(locations.checkpoint, locations.output).committed_batches()
    assert (report.input_rows, report.quarantined_rows) == (3, 2)
    assert sorted(map(str, quarantine_rows(locations.quarantine))) == sorted(map(str, first))


def test_a_landing_with_only_empty_files_succeeds(spark, clickstream, locations, quiet):
    land(locations.landing, {"empty-1.json": [], "empty-2.json": [""]})
    report = run_pipeline(spark, clickstream, locations, quiet)
    assert (report.status, report.input_files, report.input_rows, report.output_rows) == ("succeeded", 2, 0, 0)


def test_strict_input_from_the_bytes_landed(spark, clickstream, locations, quiet):
    """What a file on disk can hold: a byte order mark, CRLF line ends, bytes that are not
    UTF-8, a value of the wrong JSON type, text after the object. Expected by hand."""
    good = [event("u1", "2023-07-30T10:00:20Z"), event("u2", "2023-07-30T10:00:40Z")]
    wrong_type = json.dumps({"user_id": 42, "eventtimestamp": "2023-07-30T10:00:30Z"})
    latin1 = '{"user_id": "jos\xe9", "eventtimestamp": "2023-07-30T10:00:50Z"}'.encode("latin-1")
    trailing = event("u3", "2023-07-30T10:00:10Z") + " junk"
    body = b"\xef\xbb\xbf" + b"\r\n".join(
        [good[0].encode(), wrong_type.encode(), latin1, trailing.encode(), good[1].encode()]
    )
    Path(locations.landing).mkdir(parents=True, exist_ok=True)
    (Path(locations.landing) / "strict.json").write_bytes(body + b"\r\n")

    report = run_pipeline(spark, clickstream, locations, quiet)

    assert (report.input_rows, report.used_rows, report.quarantined_rows) == (5, 2, 3)
    rows = sorted((r["reason"], r["line"], r["detail"]) for r in quarantine_rows(locations.quarantine))
    assert rows == [
        ("invalid_encoding", base64.b64encode(latin1).decode(), "not UTF-8 at byte 16; the line is kept in base64"),
        ("malformed_json", trailing, f"JSON is malformed: trailing characters (byte {len(trailing) - 3})"),
        ("wrong_field_type", wrong_type, "user_id: JSON integer where string is declared"),
    ]
