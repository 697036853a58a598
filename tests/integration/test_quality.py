"""Great Expectations on real run output: good output passes, corrupted output fails
exactly the expectations it breaks, and uncommitted files are never read."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from jobs import declare
from jobs.lake.layout import Locations
from jobs.run.checkpoint import CheckpointLog
from jobs.run.report import RunReport, load_reports
from jobs.validate.result import CheckResult, ValidationResult, load_results
from jobs.validate.suite import load_suite
from jobs.validate.validation import validate_run, validate_table
from tests.helpers import REPO, all_lines, land, python_cmd, replace_parquet_file, run_pipeline
from tests.integration.test_streaming import ARRIVALS
from tests.model import ClickstreamModel


@pytest.fixture(scope="module")
def validated(spark, tmp_path_factory) -> dict:
    """Two real runs of clickstream over the test arrivals, each validated."""
    root = tmp_path_factory.mktemp("quality") / "root"
    spec = declare.load("clickstream")
    locations = Locations.resolve(spec.name, root=str(root))
    model = ClickstreamModel()
    written, quarantine_shares, validations = [], [], []
    input_rows = quarantined = 0
    for files in ARRIVALS[:3]:
        land(locations.landing, files)
        report = run_pipeline(spark, spec, locations, [])
        expected = model.run([all_lines(files)])
        written.append(len(expected.emitted))
        quarantine_shares.append(expected.quarantined_rows / expected.input_rows)
        input_rows += expected.input_rows
        quarantined += expected.quarantined_rows
        validations.append(validate_run(spark, spec, locations, report, echo=lambda line: None))
    return {
        "root": root,
        "spec": spec,
        "locations": locations,
        "validations": validations,
        "written": written,
        "quarantine_shares": quarantine_shares,
        # Over all runs: the whole table's accounting check.
        "table_warnings": ["quarantine_share (run report)"] if quarantined / input_rows > 0.05 else [],
    }


@pytest.fixture
def damaged(spark, tmp_path) -> tuple[Locations, RunReport, pd.DataFrame, int]:
    """A fresh pipeline after two runs, one file of the second run's output corrupted.

    Fresh, not a copy: Spark's sink log records absolute paths, so a copied table would
    still read the original's files.
    """
    spec = declare.load("clickstream")
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    model = ClickstreamModel()
    for files in ARRIVALS[:2]:
        land(locations.landing, files)
        run_pipeline(spark, spec, locations, [])
        written = len(model.run([all_lines(files)]).emitted)
    report = load_reports(locations.runs)[1]
    # The duplicated row adds one to what the second run wrote.
    return locations, report, _corrupt_one_committed_file(spark, locations, report), written + 1


def _failed(validation: ValidationResult) -> dict[str, CheckResult]:
    return {c.name: c for c in validation.checks if c.success is False}


def test_good_output_passes_every_check(validated):
    # Only warn checks may fail on good output: a run whose windows all stay open writes
    # nothing, and the test arrivals quarantine more than the suite's 5% share.
    expected_warnings = [
        [
            name
            for name, fails in [
                ("table_row_count_to_be_between (table)", rows == 0),
                ("quarantine_share (run report)", share > 0.05),
            ]
            if fails
        ]
        for rows, share in zip(validated["written"], validated["quarantine_shares"], strict=True)
    ]
    assert [[c.name for c in v.checks if c.success is False] for v in validated["validations"]] == expected_warnings
    assert [v.status for v in validated["validations"]] == ["warned" if w else "passed" for w in expected_warnings]
    assert [] in expected_warnings, "at least one run should pass cleanly"
    # Each run's validation read exactly the rows that run wrote (per the independent model).
    assert [v.rows_validated for v in validated["validations"]] == validated["written"]
    for validation in validated["validations"]:
        assert all(c.success is not None for c in validation.checks)
        assert all(c.severity == "warn" for c in validation.checks if c.success is False)
        stored = json.loads(
            (Path(validated["locations"].runs) / f"{validation.validation_id}.quality.json").read_text()
        )
        assert stored["status"] == validation.status and len(stored["checks"]) == 9


def test_whole_table_passes_and_reads_every_committed_row(spark, validated):
    validation = validate_table(spark, validated["spec"], validated["locations"], echo=lambda line: None)
    assert [c.name for c in validation.checks if c.success is False] == validated["table_warnings"]
    assert validation.rows_validated == sum(validated["written"])
    assert validation.run_ids == [r.run_id for r in load_reports(validated["locations"].runs)]
    balance = next(c for c in validation.checks if c.name.startswith("rows_balance"))
    assert balance.observed["input_rows"] == sum(
        len([line for lines in files.values() for line in lines if line.strip()]) for files in ARRIVALS[:3]
    )


def test_files_the_sink_never_committed_are_not_read(spark, validated, tmp_path):
    locations = validated["locations"]
    # A crashed batch can leave a written but uncommitted file: full of bad rows here.
    stray = spark.createDataFrame(
        [(None, None, None, -5)], "window_start timestamp, window_end timestamp, user_id string, event_count long"
    )
    stray.coalesce(1).write.parquet(str(tmp_path / "stray"))
    (part,) = (tmp_path / "stray").glob("part-*.parquet")
    stray_file = Path(locations.output) / "window_date=2023-07-30" / "part-99999-uncommitted.c000.parquet"
    shutil.copy(part, stray_file)
    try:
        validation = validate_table(spark, validated["spec"], locations, echo=lambda line: None)
    finally:
        stray_file.unlink()
    assert [c.name for c in validation.checks if c.success is False] == validated["table_warnings"]
    assert validation.rows_validated == sum(validated["written"])


def _corrupt_one_committed_file(spark, locations: Locations, run_report: RunReport) -> pd.DataFrame:
    """Rewrites a file the run committed: one duplicated row, one null user, one 2-minute window."""
    log = CheckpointLog(locations.checkpoint, locations.output)
    files = [Path(f.removeprefix("file:")) for b in run_report.batch_ids for f in log.sink_files(b)]
    target = max(files, key=lambda f: pq.ParquetFile(f).metadata.num_rows)
    rows = spark.read.parquet(str(target)).orderBy("window_start", "user_id").toPandas()
    assert len(rows) >= 3, "the test needs a committed file with three rows"
    rows.loc[1, "user_id"] = None
    rows.loc[2, "window_end"] = rows.loc[2, "window_end"] + pd.Timedelta(minutes=1)
    corrupted = pd.concat([rows, rows.iloc[[0]]], ignore_index=True)
    replace_parquet_file(spark, target, corrupted)
    return corrupted


def test_corrupted_output_fails_exactly_the_broken_expectations(spark, damaged):
    locations, report, corrupted, total = damaged
    spec = declare.load("clickstream")
    validation = validate_run(spark, spec, locations, report, echo=lambda line: None)

    # What should fail, counted from the corrupted rows themselves.
    nulls = int(corrupted["user_id"].isna().sum())
    lengths = (corrupted["window_end"] - corrupted["window_start"]).dt.total_seconds()
    wrong_length = int((lengths != 60).sum())
    duplicated = int(corrupted.duplicated(["window_start", "user_id"], keep=False).sum())
    assert (nulls, wrong_length, duplicated) == (1, 1, 2)

    assert validation.status == "failed"
    failed = _failed(validation)
    assert sorted(failed) == [
        "column_values_to_be_between (window_length_s)",
        "column_values_to_not_be_null (user_id)",
        "compound_columns_to_be_unique (window_start, user_id)",
    ]
    assert validation.rows_validated == total
    assert failed["column_values_to_not_be_null (user_id)"].message == f"user_id: {nulls} of {total} rows are null"
    assert failed["column_values_to_be_between (window_length_s)"].message.startswith(
        f"window_length_s: {wrong_length} of {total} rows are not between 60 and 60"
    )
    assert failed["compound_columns_to_be_unique (window_start, user_id)"].message.startswith(
        f"window_start, user_id: {duplicated} of {total} rows share their key with another row"
    )
    # Great Expectations' result was kept small: a few examples, never the whole column.
    assert all(len(c.examples) <= 5 for c in validation.checks)

    # A warn severity reports the same failures without failing the validation.
    suite = load_suite(spec)
    lenient = suite.model_copy(
        update={"expectations": tuple(e.model_copy(update={"severity": "warn"}) for e in suite.expectations)}
    )
    warned = validate_run(spark, spec, locations, report, lenient, echo=lambda line: None)
    assert warned.status == "warned"
    assert sorted(_failed(warned)) == sorted(failed)


@pytest.mark.slow
def test_cli_exit_code_follows_severity(damaged, tmp_path):
    locations = damaged[0]
    root = str(tmp_path / "root")

    failing = subprocess.run(
        python_cmd("validate", "clickstream", "--root", root, "--all"), cwd=REPO, capture_output=True, text=True
    )
    assert failing.returncode == 4, failing.stderr
    assert "FAILED" in failing.stdout
    assert "FAIL column_values_to_not_be_null (user_id): user_id: 1 of" in failing.stdout

    table_results = [v for v in load_results(locations.runs) if v.scope == "table"]
    assert len(table_results) == 1 and table_results[0].status == "failed"

    warning = subprocess.run(
        python_cmd("validate", "clickstream", "--root", root, "--run", load_reports(locations.runs)[0].run_id),
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    # The first run only breaks warn checks (it wrote nothing, and quarantined a lot): exit 0.
    assert warning.returncode == 0, warning.stdout + warning.stderr
    assert "WARNED" in warning.stdout
    assert "WARN quarantine_share (run report)" in warning.stdout


def _open_in_chromium(browser, url: str, screenshot: Path) -> tuple[object, list[str]]:
    """Loads `url` in a fresh page; returns the page and every error it met."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda message: message.type == "error" and problems.append(f"console: {message.text}"))
    page.on("requestfailed", lambda request: problems.append(f"failed to load {request.url}"))
    page.goto(url, wait_until="networkidle")
    page.screenshot(path=str(screenshot), full_page=True)
    return page, problems


def test_report_opens_without_errors_in_headless_chromium(validated):
    from playwright.sync_api import sync_playwright

    from jobs.publish import report as quality_report

    browser_path = subprocess.run(
        [str(REPO / "infra" / "chromium.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()
    locations = validated["locations"]
    summary = Path(quality_report.build(str(validated["root"]), echo=lambda line: None))
    artifacts = REPO / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    reports = load_reports(locations.runs)
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_path, args=flags)
        try:
            page, problems = _open_in_chromium(browser, summary.as_uri(), artifacts / "report-summary.png")
            assert problems == []
            # One table row per run, newest first, each with its validation verdict.
            rows = page.locator("#clickstream table tbody tr")
            assert rows.count() == len(reports)
            assert rows.first.locator("td").first.inner_text() == reports[-1].run_id
            verdicts = [v.status for v in reversed(validated["validations"])]
            assert [rows.nth(i).locator(".badge").nth(1).inner_text() for i in range(len(reports))] == verdicts
            # The chart: one bar segment per non-zero fate of each run that read input.
            segments = sum(bool(r.used_rows) + bool(r.quarantined_rows) + bool(r.late_rows_dropped) for r in reports)
            assert page.locator("#clickstream svg rect").count() == segments

            docs = summary.parent / "data_docs" / "index.html"
            page, problems = _open_in_chromium(browser, docs.as_uri(), artifacts / "data-docs-index.png")
            assert problems == []
            assert page.locator("text=clickstream").count() > 0
            result_page = summary.parent / "data_docs" / validated["validations"][-1].data_docs_page
            page, problems = _open_in_chromium(browser, result_page.as_uri(), artifacts / "data-docs-result.png")
            assert problems == []
            assert page.locator("text=window_length_s").count() > 0
        finally:
            browser.close()
