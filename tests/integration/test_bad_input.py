"""Unusable records are quarantined with file, line and reason, counted, and never fail a run."""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import random
import shutil
from pathlib import Path

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger
from jobs.flow.source import RECORD_LIMIT
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


def test_every_kind_of_bad_record_is_quarantined_with_file_line_and_reason(spark, clickstream, locations):
    good = [event("u1", "2023-07-30T10:00:20Z"), event("u2", "2023-07-30T10:00:40Z")]
    land(locations.landing, {"mixed.json": [*good, *BAD_LINES], "empty.json": [], "only-bad.json": ["nope", "{"]})

    report = run_pipeline(spark, clickstream, locations)

    assert report.status == "succeeded"
    assert report.input_files == 3
    assert (report.input_rows, report.quarantined_rows, report.used_rows) == (9, 7, 2)
    rows = quarantine_rows(locations.quarantine)
    by_line = {r["line"]: (Path(r["source_file"]).name, r["line_number"], r["reason"]) for r in rows}
    expected = {line: ("mixed.json", 3 + n, reason) for n, (line, reason) in enumerate(BAD_LINES.items())}
    expected |= {"nope": ("only-bad.json", 1, "malformed_json"), "{": ("only-bad.json", 2, "malformed_json")}
    assert by_line == expected
    assert len(rows) == 7
    assert {(r["run_id"], r["batch_id"]) for r in rows} == {(report.run_id, 0)}
    assert Ledger(locations.ledger).read_account(0)["read_again"] is False  # counted as the query read it


def test_accounting_a_batch_again_rewrites_the_same_quarantine(spark, clickstream, locations):
    """A crash after a batch commits but before its accounting is repaired by the next
    run, which must not duplicate quarantined rows."""
    land(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:20Z"), "{bad", "[]"]})
    run_pipeline(spark, clickstream, locations)
    first = quarantine_rows(locations.quarantine)
    # Forget the accounting, as if the process had died right after the batch committed.
    shutil.rmtree(Path(locations.ledger) / "accounting")

    report = run_pipeline(spark, clickstream, locations)

    assert report.recovered_batch_ids == CheckpointLog.of(locations).committed_batches()
    assert (report.input_rows, report.quarantined_rows) == (3, 2)
    assert Ledger(locations.ledger).read_account(0)["read_again"] is True  # its count died with the run
    again = quarantine_rows(locations.quarantine)
    assert {r.pop("run_id") for r in again} == {report.run_id}  # the run that accounted them
    assert sorted(map(str, again)) == sorted(str({k: v for k, v in r.items() if k != "run_id"}) for r in first)


def test_a_landing_with_only_empty_files_succeeds(spark, clickstream, locations):
    land(locations.landing, {"empty-1.json": [], "empty-2.json": [""]})
    report = run_pipeline(spark, clickstream, locations)
    assert (report.status, report.input_files, report.input_rows, report.output_rows) == ("succeeded", 2, 0, 0)


def test_strict_input_from_the_bytes_landed(spark, clickstream, locations):
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

    report = run_pipeline(spark, clickstream, locations)

    assert (report.input_rows, report.used_rows, report.quarantined_rows) == (5, 2, 3)
    rows = sorted(
        (r["line_number"], r["reason"], r["line"], r["detail"]) for r in quarantine_rows(locations.quarantine)
    )
    assert rows == [
        (2, "wrong_field_type", wrong_type, "user_id: expected string, got integer"),
        (3, "invalid_encoding", base64.b64encode(latin1).decode(), "not UTF-8 at byte 16; the line is kept in base64"),
        (4, "malformed_json", trailing, f"JSON is malformed: trailing characters (byte {len(trailing) - 3})"),
    ]


@contextlib.contextmanager
def blocks_of(spark, size: int):
    """Spark reads files in blocks of about `size` bytes (the default is 128 MiB)."""
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    before = {key: spark.conf.get(key) for key in keys}
    for key in keys:
        spark.conf.set(key, str(size))
    try:
        yield
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)


def test_line_numbers_count_every_line_of_a_file_read_in_blocks(spark, clickstream, locations):
    """A file read in many blocks by many tasks, with LF, CRLF and lone CR line ends and
    blank lines: each quarantined record's number is its line in the file, as a text
    editor counts it (Python's bytes.splitlines, independent of the code under test)."""
    rng = random.Random(7)
    lines, ends = [], [b"\n", b"\r\n", b"\r"]
    for n in range(400):
        kind = rng.random()
        if kind < 0.1:
            lines.append(b"")
        elif kind < 0.3:
            lines.append(b"{broken " + b"x" * rng.randrange(0, 200))
        else:
            lines.append(event(f"u{n % 7}", f"2023-07-30T10:{n % 60:02d}:00Z", "p" * rng.randrange(0, 150)).encode())
    body = b""
    for line in lines:  # (a blank line after a lone CR ends in CR: with an LF, it would be one CR LF)
        body += line + (b"\r" if not line and body.endswith(b"\r") else rng.choice(ends))
    Path(locations.landing).mkdir(parents=True, exist_ok=True)
    (Path(locations.landing) / "long.json").write_bytes(body)
    assert body.splitlines() == lines

    with blocks_of(spark, 2048):  # about 30 blocks
        report = run_pipeline(spark, clickstream, locations)

    expected = sorted((n, line.decode()) for n, line in enumerate(lines, 1) if line.startswith(b"{broken"))
    assert sorted((r["line_number"], r["line"]) for r in quarantine_rows(locations.quarantine)) == expected
    assert report.quarantined_rows == len(expected)
    assert report.used_rows == sum(1 for line in lines if line.startswith(b'{"'))


def test_a_gzip_landing_is_read_counted_and_numbered(spark, clickstream, locations):
    lines = [event("u1", "2023-07-30T10:00:20Z"), "{bad", "", event("u2", "2023-07-30T10:00:40Z"), "[]"]
    Path(locations.landing).mkdir(parents=True, exist_ok=True)
    (Path(locations.landing) / "events.json.gz").write_bytes(gzip.compress("\n".join(lines).encode() + b"\n"))

    report = run_pipeline(spark, clickstream, locations)

    assert (report.input_files, report.input_rows, report.used_rows, report.quarantined_rows) == (1, 4, 2, 2)
    rows = sorted((r["line_number"], r["reason"]) for r in quarantine_rows(locations.quarantine))
    assert rows == [(2, "malformed_json"), (5, "not_a_json_object")]
    assert Path(quarantine_rows(locations.quarantine)[0]["source_file"]).name == "events.json.gz"


def test_records_up_to_the_limit_are_used_and_larger_ones_quarantined_as_too_large(spark, clickstream, locations):
    big = event("u1", "2023-07-30T10:00:20Z", payload="x" * (33 * 2**20))  # 33 MiB, valid
    too_big = event("u2", "2023-07-30T10:00:40Z", payload="y" * RECORD_LIMIT)  # valid JSON, over the limit
    land(locations.landing, {"big.json": [big, too_big, event("u3", "2023-07-30T10:00:50Z")]})

    report = run_pipeline(spark, clickstream, locations)

    assert (report.input_rows, report.used_rows, report.quarantined_rows) == (3, 2, 1)
    [row] = quarantine_rows(locations.quarantine)
    # Its quarantine record keeps its first MiB; the whole line stays in its file, at its number.
    assert (row["line_number"], row["reason"], row["line"] == too_big[: 2**20]) == (2, "record_too_large", True)
    assert row["detail"] == f"{len(too_big):,} bytes; the limit is {RECORD_LIMIT:,}; its first 1,048,576 are kept"


def test_a_batch_whose_output_committed_but_not_its_checkpoint_is_accounted_from_its_files(
    spark, clickstream, locations
):
    """A run that died after the file sink committed a batch's output but before Spark
    wrote the batch's commit: the next run redoes the batch, whose sink skips it without
    reading a line (it has the output already). Its rows are counted by reading its files
    again, not taken as the none the query read."""
    land(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:20Z")]})
    run_pipeline(spark, clickstream, locations)
    # Not past the watermark's time: no batch without data follows this one.
    land(locations.landing, {"b.json": [event("u2", "2023-07-30T10:00:10Z"), "{bad", "[]"]})
    (redone,) = run_pipeline(spark, clickstream, locations).batch_ids
    # As if that run had died after its sink committed the batch, before Spark's commit.
    for name in (str(redone), f".{redone}.crc"):
        (Path(locations.checkpoint) / "commits" / name).unlink()
    (Path(locations.ledger) / "accounting" / str(redone)).unlink()

    report = run_pipeline(spark, clickstream, locations)

    assert (report.batch_ids, report.recovered_batch_ids, report.input_rows) == ([redone], [], 3)
    account = Ledger(locations.ledger).read_account(redone)
    assert (account["input_files"], account["input_rows"], account["quarantined_rows"]) == (1, 3, 2)
    assert account["read_again"] is True  # the query read none of it
    assert len(quarantine_rows(locations.quarantine)) == 2
