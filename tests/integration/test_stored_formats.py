"""What earlier code stored still loads: run reports, a ledger (accounts, Spark's counts, the
contract), a checkpoint and a table written by the code of 2026-11-25, before wave 4's
renames (tests/fixtures/root_before_wave4: `python -m jobs run clickstream` after each of two
arrivals), are read by today's code, and a run resumes from them exactly once."""

from __future__ import annotations

import shutil
from pathlib import Path

from jobs.accounting.accounts import BatchAccount
from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.helpers import REPO, assert_run_matches, event, land, run_pipeline, table_rows
from tests.model import ClickstreamModel

FIXTURE = REPO / "tests" / "fixtures" / "root_before_wave4"
PLACEHOLDER = "@ROOT@"  # where the fixture's root was, in every text file that names it
ARRIVALS = ("a.json", "b.json")  # in the order they landed, each followed by a run


def restored(tmp_path: Path, fixture: Path = FIXTURE) -> Path:
    """The fixture under tmp_path, naming its new place where it named its old one (Spark's
    logs and the ledger hold absolute paths); without checksums, which no longer match."""
    root = tmp_path / "root"
    shutil.copytree(fixture, root)
    for path in (p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if PLACEHOLDER.encode() in data:
            path.write_bytes(data.replace(PLACEHOLDER.encode(), str(root).encode()))
    return root


def arrivals(root: Path) -> list[list[str]]:
    landed = root / "landing" / "clickstream" / "dt=2023-07-30"
    return [(landed / name).read_text().splitlines() for name in ARRIVALS]


def test_earlier_run_reports_accounts_and_file_ledger_load(tmp_path, clickstream):
    root = restored(tmp_path)
    locations = Locations.resolve(clickstream.name, root=str(root))
    model = ClickstreamModel()
    expected = [model.run([lines]) for lines in arrivals(root)]
    reports = load_reports(locations.runs)
    assert [r.run_id for r in reports] == ["first-run", "second-run"]
    for report, result in zip(reports, expected, strict=True):
        assert report.status == "succeeded"
        assert_run_matches(report, result)
    ledger = Ledger(locations.ledger)
    accounts = [BatchAccount.model_validate(ledger.read_account(b)) for b in sorted(ledger.accounted_batches())]
    assert [a.batch_id for a in accounts] == [0, 1, 2, 3]
    assert sum(a.input_rows for a in accounts) == sum(r.input_rows for r in expected) == 8
    assert ledger.recorded_contract() is not None
    listed = taken_files(ledger, CheckpointLog.of(locations), None, None)
    assert [(Path(f["path"]).name, f["batch_id"], f["input_rows"]) for f in listed] == [
        ("a.json", 0, 5),
        ("b.json", 2, 3),
    ]


def test_a_run_resumes_from_an_earlier_checkpoint_exactly_once(spark, tmp_path, clickstream):
    root = restored(tmp_path)
    locations = Locations.resolve(clickstream.name, root=str(root))
    model = ClickstreamModel()
    for lines in arrivals(root):
        model.run([lines])
    later = [event(f"u{i % 2}", f"2023-07-30T10:3{i}:00Z", event_id=f"c{i}") for i in range(4)]
    land(str(root / "landing" / "clickstream" / "dt=2023-07-30"), {"c.json": later})
    report = run_pipeline(spark, clickstream, locations)
    expected = model.run([later])
    assert report.status == "succeeded" and report.input_files == 1  # the earlier files are not read again
    assert report.batch_ids[0] == 4  # on from the checkpoint's last batch
    assert_run_matches(report, expected)
    assert table_rows(spark, locations.output) == model.rows()
