"""A value a producer sends is text on every page: Chromium opens the data quality report and
the Data Docs built from a real run whose events carry markup and script, and nothing runs.
A suite can keep no sample values at all (personal data)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jobs import declare
from jobs.lake.layout import Locations
from jobs.validate.suite import load_suite
from jobs.validate.validation import validate_run
from tests.helpers import REPO, land, run_pipeline

# document.title is what a script that ran would change; the page's own title is never this.
PWNED = "pwned"
IMAGE = f"<img src=x onerror=\"document.title='{PWNED}'\">"
SVG = f"<svg onload=\"document.title='{PWNED}'\">"
SCRIPT = f"<script>document.title='{PWNED}'</script>"


def github_event(number: int, at: str, repo: str) -> str:
    return json.dumps(
        {
            "id": f"e{number}",
            "type": "PushEvent",
            "actor": {"id": 1, "login": "octocat"},
            "repo": {"id": 7, "name": repo},
            "payload": {"size": 1, "commits": [{"sha": "a1", "message": SCRIPT}]},
            "created_at": at,
        }
    )


@pytest.fixture(scope="module")
def hostile_run(spark, tmp_path_factory) -> dict:
    """github_activity over events whose repository names are markup (they break only the
    `warn` regex owner/name, so they are written and kept as samples), and a malformed line
    holding a script (quarantined)."""
    root = tmp_path_factory.mktemp("hostile") / "root"
    pipeline = declare.load("github_activity")
    locations = Locations.resolve(pipeline.name, root=str(root))
    lines = [
        github_event(1, "2023-07-30T10:00:10Z", IMAGE),
        github_event(2, "2023-07-30T10:00:20Z", SVG),
        github_event(3, "2023-07-30T10:20:00Z", "octo/cat"),  # moves the watermark past 10:00
        SCRIPT + "{",
    ]
    land(locations.landing, {"events.json": lines})
    report = run_pipeline(spark, pipeline, locations)
    assert (report.input_rows, report.quarantined_rows) == (4, 1)
    validation = validate_run(spark, pipeline, locations, report)
    return {"root": root, "locations": locations, "validation": validation, "pipeline": pipeline, "report": report}


def _pages(root: Path, validation) -> list[Path]:
    docs = root / "reports" / "data_docs"
    return [root / "reports" / "index.html", docs / "index.html", docs / validation.data_docs_page]


def test_values_with_markup_are_text_in_the_report_and_the_data_docs(hostile_run):
    from playwright.sync_api import sync_playwright

    from jobs.quality_report import page as quality_report

    root, validation = hostile_run["root"], hostile_run["validation"]
    regex = next(c for c in validation.checks if c.name.startswith("column_values_to_match_regex"))
    assert regex.success is False and set(regex.examples) == {IMAGE, SVG}  # kept as samples, unchanged
    quality_report.build(str(root))
    browser_path = subprocess.run(
        [str(REPO / "infra" / "chromium.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_path, args=flags)
        try:
            for page_file in _pages(root, validation):
                page = browser.new_page()
                page.goto(page_file.as_uri(), wait_until="networkidle")
                assert page.title() != PWNED, page_file
                assert page.locator('img[src="x"], svg[onload]').count() == 0, page_file
                scripts = page.locator("script").all_inner_texts()
                assert not any(f"document.title='{PWNED}'" in s for s in scripts), page_file
                if page_file.name != "index.html":  # the validation page shows the samples, as text
                    text = page.locator("body").inner_text()
                    assert IMAGE in text and SVG in text, page_file
                page.close()
        finally:
            browser.close()


def test_a_suite_without_samples_keeps_no_value_anywhere(spark, hostile_run):
    """`samples: false`: the validation's results, GX's stored result and its page hold counts only."""
    from jobs.quality_report import page as quality_report

    pipeline, locations, report = hostile_run["pipeline"], hostile_run["locations"], hostile_run["report"]
    suite = load_suite(pipeline).model_copy(update={"samples": False})
    validation = validate_run(spark, pipeline, locations, report, suite=suite)
    regex = next(c for c in validation.checks if c.name.startswith("column_values_to_match_regex"))
    assert regex.success is False and regex.unexpected_count == 2 and regex.examples == []
    quality_report.build(str(hostile_run["root"]))
    # GX keeps each validation's result under the run's name and the validation's time: the newest is this one.
    stored = max((p for p in Path(locations.quality).rglob("*.json") if validation.validation_id in str(p)), key=str)
    page = Path(hostile_run["root"]) / "reports" / "data_docs" / validation.data_docs_page
    for kept in [stored, page, *Path(locations.runs).glob(f"{validation.validation_id}*")]:
        text = kept.read_text()
        assert "onerror" not in text and "onload" not in text, kept


def test_the_report_never_reads_the_quarantine_however_large(spark, tmp_path):
    """Before, a 2 MiB quarantined line failed the report of every pipeline (pyarrow's 1 MiB
    block), and the report read every quarantine file ever written. Now the reasons come from
    the runs' reports: a 100 MiB line and 10,000 files beside them change nothing."""
    import tracemalloc

    from jobs.quality_report import page as quality_report

    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    huge = '{"user_id": "' + "x" * (2 * 2**20)  # malformed, 2 MiB
    event = '{"event_id": "e", "user_id": "u1", "event": "click", "eventtimestamp": "2023-07-30T10:00:00Z"}'
    land(locations.landing, {"a.json": [event, huge]})
    report = run_pipeline(spark, pipeline, locations)
    assert report.quarantined_rows == 1 and sum(r.rows for r in report.quarantine_reasons.values()) == 1
    [reason] = report.quarantine_reasons
    history = Path(locations.quarantine) / "batch_id=0"
    (history / "part-giant.json").write_text(json.dumps({"reason": "x", "line": "y" * 100 * 2**20}) + "\n")
    for n in range(10_000):
        folder = Path(locations.quarantine) / f"batch_id={1000 + n // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"part-{n}.json").write_text('{"reason": "old", "line": "{"}\n')

    tracemalloc.start()
    page = Path(quality_report.build(str(tmp_path / "root"), with_data_docs=False))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 * 2**20, peak  # nothing of the quarantine's 100 MiB was read
    shown = page.read_text()
    assert f'<td class="text">{reason}</td><td>1</td>' in shown and ">old<" not in shown


def test_gzip_files_are_admitted_by_their_lines_not_their_bytes(spark, tmp_path):
    """Spark counts a file by its listed size: before, three gzip files of ~60 KB holding 1 MB
    of lines each went into one batch under a 1.5 MiB limit (4.5 MB of lines); now the limit
    is divided by how much they inflate (their trailers say), and each batch holds one."""
    import gzip

    from jobs.accounting.file_ledger import accounts_after
    from jobs.accounting.ledger import Ledger
    from tests.helpers import event

    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    scratch = tmp_path / "gz"
    scratch.mkdir()
    for day in range(3):
        lines = [event(f"u{n % 50}", f"2023-07-3{day}T10:{n % 60:02d}:00Z", f"e{day}-{n}") for n in range(10_000)]
        (scratch / f"day-{day}.json.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    from jobs.lake.landing import land_files

    land_files(sorted(str(p) for p in scratch.iterdir()), locations.landing)
    report = run_pipeline(spark, pipeline, locations, max_bytes_per_trigger=int(1.5 * 2**20))
    assert report.input_rows == 30_000
    assert report.batch_limits["inflation"] > 10
    batches = [a for a in accounts_after(Ledger(locations.ledger)) if a["input_files"]]
    assert [a["input_files"] for a in batches] == [1, 1, 1]


def test_a_line_of_1_5_gib_is_quarantined_and_the_run_goes_on(spark, tmp_path):
    """Before, a 1.5 MB .json.gz holding one line of 1.5 GiB ended the JVM (out of memory)
    in batch 0, and every retry did again. Now the reader passes the line over without
    holding it, and the batch's account finds it, counts it and quarantines it at its line;
    a malformed line after it keeps its own number."""
    import gzip

    from jobs.flow.source import TOO_LARGE_KEPT
    from jobs.lake.landing import land_files
    from tests.helpers import event

    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    giant = tmp_path / "giant.json.gz"
    opening, closing = b'{"event_id": "e2", "user_id": "', b'"}'
    with gzip.open(giant, "wb", compresslevel=6) as out:
        out.write(event("u1", "2023-07-30T10:00:00Z", "e1").encode() + b"\n")
        out.write(opening)
        for _ in range(96):
            out.write(b"x" * 2**24)  # 1.5 GiB
        out.write(closing + b"\n" + b"{malformed\n" + event("u2", "2023-07-30T10:20:00Z", "e3").encode() + b"\n")
    assert giant.stat().st_size < 4 * 2**20
    land_files([str(giant)], locations.landing)

    report = run_pipeline(spark, pipeline, locations)

    assert (report.status, report.input_rows, report.quarantined_rows) == ("succeeded", 4, 2)
    assert report.quarantine_reasons["record_too_large"].rows == 1
    kept, malformed = [json.loads(line) for p in Path(locations.quarantine).rglob("*.json") for line in p.open()]
    assert (malformed["line_number"], malformed["reason"]) == (3, "malformed_json")  # numbered past the long line
    assert (kept["line_number"], kept["reason"]) == (2, "record_too_large")
    assert kept["line"].startswith('{"event_id": "e2", "user_id": "xxx') and len(kept["line"]) == TOO_LARGE_KEPT
    assert kept["detail"].startswith(f"{len(opening) + 96 * 2**24 + len(closing):,} bytes")
