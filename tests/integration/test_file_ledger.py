"""The file ledger (`python -m jobs files`): every landed file a run took, with its rows,
and the files the output table holds, compared with the model and the file system."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

from jobs.cli import main
from tests.helpers import event, land_in_order, run_pipeline
from tests.model import ClickstreamModel

FIRST_RUN = {
    "a.json": [
        event("u1", "2023-07-30T10:00:10Z"),
        event("u2", "2023-07-30T10:00:20Z"),
        "not json",
        event("u1", "2023-07-30T10:20:00Z"),  # the watermark moves to 10:15
    ],
    "b.json": [
        event("u3", "2023-07-30T10:01:00Z"),  # not late: this batch drops against the one before's watermark
        event("u1", "2023-07-30T10:21:00Z"),
        event(None, "2023-07-30T10:22:00Z"),  # no user_id
        "",
    ],
    "empty.json": [],
}
SECOND_RUN = {"c.json": [event("u2", "2023-07-30T10:30:00Z"), event("u3", "2023-07-30T10:05:00Z")]}  # late


def _ledger(capsys, root: Path, *options: str) -> list[dict]:
    assert main(["files", "clickstream", "--root", str(root), "--json", *options]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_the_ledger_names_each_file_with_its_batch_run_and_rows(spark, clickstream, root, locations, capsys):
    model = ClickstreamModel()
    land_in_order(locations.landing, FIRST_RUN)
    first = run_pipeline(spark, clickstream, locations, max_files_per_trigger=1)
    expected = dict(zip(FIRST_RUN, model.run_batches(list(FIRST_RUN.values())), strict=True))
    land_in_order(locations.landing, SECOND_RUN)
    second = run_pipeline(spark, clickstream, locations, max_files_per_trigger=1)
    expected |= dict(zip(SECOND_RUN, model.run_batches(list(SECOND_RUN.values())), strict=True))

    ledger = _ledger(capsys, root)

    landed = Path(locations.landing)
    assert [Path(f["path"]).name for f in ledger] == [*FIRST_RUN, *SECOND_RUN]  # in batch order
    assert len({f["batch_id"] for f in ledger}) == 4  # one file per batch
    for f in ledger:
        name, on_disk = Path(f["path"]).name, (landed / Path(f["path"]).name).stat()
        want = expected[name]
        rows = (f["input_rows"], f["used_rows"], f["quarantined_rows"], f["late_rows_dropped"])
        assert rows == (want.input_rows, want.used_rows, want.quarantined_rows, want.late_rows_dropped), name
        assert f["size_bytes"] == on_disk.st_size
        assert datetime.fromisoformat(f["modified_at"]) == datetime.fromtimestamp(
            on_disk.st_mtime_ns // 10**6 / 1000, UTC
        )
        assert f["run_id"] == (second if name in SECOND_RUN else first).run_id
    assert sum(f["late_rows_dropped"] for f in ledger) == 1 and sum(f["quarantined_rows"] for f in ledger) == 2

    # Filters: by run, and by the day batches committed.
    assert [Path(f["path"]).name for f in _ledger(capsys, root, "--run", second.run_id)] == ["c.json"]
    today = datetime.fromisoformat(first.started_at).date()
    assert len(_ledger(capsys, root, "--since", today.isoformat())) == 4
    assert _ledger(capsys, root, "--since", (today + timedelta(days=1)).isoformat()) == []
    # ... or by a time: just after the first run's last commit (times to the millisecond, as Spark keeps them).
    last_of_first = max(datetime.fromisoformat(f["committed_at"]) for f in ledger if f["run_id"] == first.run_id)
    assert all(re.fullmatch(r"[\d:T-]+(\.\d{3})?Z", f["committed_at"]) for f in ledger)
    after_first = (last_of_first + timedelta(milliseconds=1)).isoformat()
    assert [Path(f["path"]).name for f in _ledger(capsys, root, "--since", after_first)] == list(SECOND_RUN)

    # The table's files: exactly those Spark reads, with their sizes.
    table = _ledger(capsys, root, "--output")
    read_by_spark = {unquote(urlparse(uri).path) for uri in spark.read.parquet(locations.output).inputFiles()}
    assert {f["path"] for f in table} == read_by_spark and table
    assert all(f["size_bytes"] == Path(f["path"]).stat().st_size for f in table)


def test_the_text_ledger_is_a_table_with_unknowns_marked(spark, clickstream, root, locations, capsys):
    land_in_order(locations.landing, {"only.json": [event("u1", "2023-07-30T10:00:10Z"), "{"]})
    run_pipeline(spark, clickstream, locations)

    assert main(["files", "clickstream", "--root", str(root)]) == 0
    header, row, total = capsys.readouterr().out.splitlines()
    assert header.split() == [
        "batch",
        "run",
        "committed",
        "rows",
        "used",
        "quarantined",
        "late",
        "known_event",  # each declared rule: the file's rows that break it
        "has_event_id",
        "no_load_test_traffic",
        "bytes",
        "modified",
        "file",
    ]
    assert row.split()[3:10] == ["2", "1", "1", "0", "0", "0", "0"] and row.endswith("/only.json")
    assert total == "1 file(s)"
