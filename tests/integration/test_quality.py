"""Great Expectations on real run output: good output passes, corrupted output fails
exactly the expectations it breaks, and uncommitted files are never read."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.history.anomalies import Anomaly
from jobs.lake.layout import Locations
from jobs.quality_report.health import STATUSES
from jobs.run.report import RunReport, load_reports, save
from jobs.settings import settings
from jobs.validate.result import CheckResult, ValidationResult, load_results, save_result
from jobs.validate.suite import load_suite
from jobs.validate.validation import validate_run, validate_table
from tests.helpers import REPO, all_lines, event, land, modes, python_cmd, replace_parquet_file, run_pipeline
from tests.integration.test_streaming import ARRIVALS, at
from tests.model import ClickstreamModel


@pytest.fixture(scope="module")
def validated(spark, tmp_path_factory) -> dict:
    """Two real runs of clickstream over the test arrivals, each validated."""
    root = tmp_path_factory.mktemp("quality") / "root"
    spec = declare.load("clickstream")
    locations = Locations.resolve(spec.name, root=str(root))
    model = ClickstreamModel()
    written, quarantine_shares, validations, violations, landed = [], [], [], [], []
    input_rows = quarantined = 0
    for number, files in enumerate(ARRIVALS[:3]):
        if number == 1:  # records that break the declared rules known_event (quarantine) and has_event_id (warn)
            files = {**files, "a2-rules.json": [event("u2", at(8.5), event="clik"), event("u3", at(8.6), None)]}
        land(locations.landing, files)
        landed.append(files)
        report = run_pipeline(spark, spec, locations)
        expected = model.run([all_lines(files)])
        violations.append(expected.violations)
        written.append(len(expected.emitted))
        quarantine_shares.append(expected.quarantined_rows / expected.input_rows)
        input_rows += expected.input_rows
        quarantined += expected.quarantined_rows
        validations.append(validate_run(spark, spec, locations, report))
    return {
        "root": root,
        "input_rows": [len(all_lines(files)) for files in landed],  # each run's, as landed
        "spec": spec,
        "locations": locations,
        "validations": validations,
        "violations": violations,  # per run, the model's
        "landed": landed,  # each run's files
        "written": written,
        "quarantine_shares": quarantine_shares,
        # Over all runs: the whole table's accounting check.
        "table_warnings": ["quarantine_share (run report)"] if quarantined / input_rows > 0.05 else [],
    }


def test_every_run_and_validation_is_in_the_history_and_sql_reads_nothing_else(validated, capsys):
    from jobs.cli import main
    from jobs.history import query

    history = query.connect(str(validated["root"]))
    runs = history.execute(
        "SELECT input_rows, output_rows FROM runs WHERE record = 'run' ORDER BY started_at, run_id"
    ).fetchall()
    assert runs == list(zip(validated["input_rows"], validated["written"], strict=True))
    verdicts = history.execute(
        "SELECT status, validated_rows FROM runs WHERE record = 'validation' ORDER BY started_at"
    ).fetchall()
    assert verdicts == [(v.status, v.rows_validated) for v in validated["validations"]]
    # Each run's batches add up to its row (each as the run's accounting wrote it, appended apart).
    unequal = history.execute(
        """SELECT r.run_id FROM runs r JOIN (SELECT run_id, sum(input_rows) i, sum(used_rows) u,
        sum(quarantined_rows) q, sum(late_rows) l FROM batches GROUP BY run_id) b USING (run_id)
        WHERE r.record = 'run' AND (r.input_rows, r.used_rows, r.quarantined_rows, r.late_rows) <> (b.i, b.u, b.q, b.l)"""
    ).fetchall()
    assert unequal == []
    # The page's queries answer (their figures are the ones above, summed their ways).
    page = (REPO / "docs" / "history.md").read_text()
    queries = re.findall(r"```sql\n(.*?)```", page, re.S)
    shares, not_passed, reasons, anomalies = (history.execute(q).fetchall() for q in queries)
    assert anomalies == []  # three runs: none judged yet
    assert shares[0][:3] == ("clickstream", 3, sum(validated["input_rows"]))
    assert [(status, failed) for _, _, status, failed, _ in not_passed] == [
        (v.status, sum(c.success is False for c in v.checks)) for v in validated["validations"] if v.status != "passed"
    ]
    assert sum(rows for _, _, rows in reasons) == sum(
        r[0] for r in history.execute("SELECT quarantined_rows FROM runs WHERE record = 'run'").fetchall()
    )
    # The command line: the same rows; a query reaches only the two views, never a file.
    assert main(["history", "clickstream", "--root", str(validated["root"]), "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["input_rows"] for r in listed] == validated["input_rows"]
    assert main(["history", "clickstrem", "--root", str(validated["root"])]) == 2  # neither logged nor declared
    assert "did you mean 'clickstream'" in capsys.readouterr().err
    outside = "SELECT * FROM read_csv('/etc/hostname')"
    assert main(["history", "--root", str(validated["root"]), "--sql", outside]) == 2
    assert "--sql:" in capsys.readouterr().err


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
        run_pipeline(spark, spec, locations)
        written = len(model.run([all_lines(files)]).emitted)
    first, report = load_reports(locations.runs)
    # As the product does, the first run is validated before the next: the test's validation
    # is then of the second run's rows alone.
    validate_run(spark, spec, locations, first)
    # The duplicated row adds one to what the second run wrote.
    return locations, report, _corrupt_one_committed_file(spark, locations, report), written + 1


def _failed(validation: ValidationResult) -> dict[str, CheckResult]:
    return {c.name: c for c in validation.checks if c.success is False}


def test_good_output_passes_every_check(validated):
    # Only warn checks may fail on good output: the test arrivals quarantine more than the
    # suite's 5% share. A run whose windows all stay open writes nothing, and rightly: its
    # row count is not checked (held in state), rather than a false warning.
    expected_warnings = [
        ["quarantine_share (run report)"] if share > 0.05 else [] for share in validated["quarantine_shares"]
    ]
    not_checked = [["table_row_count_to_be_between (table)"] if rows == 0 else [] for rows in validated["written"]]
    assert [[c.name for c in v.checks if c.success is False] for v in validated["validations"]] == expected_warnings
    assert [[c.name for c in v.checks if c.success is None] for v in validated["validations"]] == not_checked
    assert not_checked[0], "the first run's windows stay open"
    assert [v.status for v in validated["validations"]] == ["warned" if w else "passed" for w in expected_warnings]
    assert [] in expected_warnings, "at least one run should pass cleanly"
    # Each run's validation read exactly the rows that run wrote (per the independent model).
    assert [v.rows_validated for v in validated["validations"]] == validated["written"]
    for validation in validated["validations"]:
        assert all(c.severity == "warn" for c in validation.checks if c.success is False)
        stored = json.loads(
            (Path(validated["locations"].runs) / f"{validation.validation_id}.quality.json").read_text()
        )
        assert stored["status"] == validation.status and len(stored["checks"]) == 9


def test_whole_table_passes_and_reads_every_committed_row(spark, validated):
    validation = validate_table(spark, validated["spec"], validated["locations"])
    assert [c.name for c in validation.checks if c.success is False] == validated["table_warnings"]
    assert validation.rows_validated == sum(validated["written"])
    assert validation.run_ids == [r.run_id for r in load_reports(validated["locations"].runs)]
    balance = next(c for c in validation.checks if c.name.startswith("rows_balance"))
    assert balance.observed["input_rows"] == sum(
        len([line for lines in files.values() for line in lines if line.strip()]) for files in validated["landed"]
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
        validation = validate_table(spark, validated["spec"], locations)
    finally:
        stray_file.unlink()
    assert [c.name for c in validation.checks if c.success is False] == validated["table_warnings"]
    assert validation.rows_validated == sum(validated["written"])


def _corrupt_one_committed_file(spark, locations: Locations, run_report: RunReport) -> pd.DataFrame:
    """Rewrites a file the run committed: one duplicated row, one null user, one 2-minute window."""
    log = CheckpointLog.of(locations)
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
    validation = validate_run(spark, spec, locations, report)

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
    warned = validate_run(spark, spec, locations, report, lenient)
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


def _other_pipelines_in_every_state(root: Path, now: datetime) -> dict[str, str]:
    """Run reports and validation results of more pipelines, written as the runs would
    write them: one whose last run failed, one whose last run's rows no validation checked,
    one no run appended rows to for 5 hours on an hourly schedule (late), one whose latest validation warned, one
    whose latest validation passed. Returns pipeline -> the status the overview must show."""
    states = {"rack_temperatures": "failing", "ad_clicks": "not validated", "device_steps": "late"}
    states |= {"ad_impressions": "warning", "rack_alerts": "healthy"}
    for number, (name, state) in enumerate(states.items()):
        runs = Locations.resolve(name, root=str(root)).runs
        started = now - timedelta(hours=5 if state == "late" else 1, minutes=number)
        report = RunReport(
            run_id=f"{started:%Y%m%dT%H%M%SZ}-test{number}",
            pipeline=name,
            trigger="available-now",
            started_at=started.isoformat(timespec="seconds"),
            status="failed" if state == "failing" else "succeeded",
            error=LONG_ERROR if state == "failing" else None,
            input_rows=800,
            used_rows=500,
            quarantined_rows=300,  # 37.5%: a share the chart must show, not a sliver
            batch_ids=[0],
            output_rows=40,
            watermark=(started - timedelta(minutes=5)).isoformat(),
            anomalies=[JUMP] if state == "warning" else [],  # named first, above the overview
        )
        save(report, runs)
        validated_runs = [report.run_id]
        if state == "late":  # an earlier run whose every row was a duplicate: a whole bar of them
            validated_runs.append(f"{started - timedelta(hours=1):%Y%m%dT%H%M%SZ}-dup")
            save(
                RunReport(
                    run_id=validated_runs[-1],
                    pipeline=name,
                    trigger="available-now",
                    started_at=(started - timedelta(hours=1)).isoformat(timespec="seconds"),
                    status="succeeded",
                    input_rows=278,
                    duplicates_dropped=278,
                    batch_ids=[0],
                    watermark=(started - timedelta(hours=1)).isoformat(),
                ),
                runs,
            )
        if state in ("late", "warning", "healthy"):
            save_result(
                ValidationResult(
                    pipeline=name,
                    scope="run",
                    validation_id=report.run_id,
                    run_ids=validated_runs,
                    validated_at=now.isoformat(timespec="seconds"),
                    status="warned" if state == "warning" else "passed",
                ),
                runs,
            )
    return states


JUMP = Anomaly(
    metric="quarantine_share",
    value=0.375,
    expected_low=0,
    expected_high=0.02,
    compared_runs=[f"r{n}" for n in range(8)],
)


# A failure's message past a line: the report folds it to its first sentence and the command.
LONG_ERROR = (
    "java.lang.OutOfMemoryError in batch 3: the Spark driver ran out of memory. "
    + "Spark's own detail. " * 40
    + "Give the driver more memory, then run `python -m jobs run rack_temperatures --max-bytes-per-trigger 64m`."
)

# The overview's status colours (jobs/quality_report/page.py STATUS_COLORS), as the screenshot shows them.
STATUS_PIXELS = {"failing": (214, 69, 65), "not validated": (214, 128, 59), "late": (142, 91, 214)}
STATUS_PIXELS |= {"warning": (227, 177, 45), "healthy": (46, 158, 91)}
_COUNT_COLOURS = """async ([png, colours]) => {
    const image = new Image();
    image.src = "data:image/png;base64," + png;
    await image.decode();
    const canvas = document.createElement("canvas");
    canvas.width = image.width; canvas.height = image.height;
    const context = canvas.getContext("2d");
    context.drawImage(image, 0, 0);
    const pixels = context.getImageData(0, 0, image.width, image.height).data;
    const counts = colours.map(() => 0);
    for (let i = 0; i < pixels.length; i += 4)
        colours.forEach(([r, g, b], k) => {
            if (Math.abs(pixels[i] - r) + Math.abs(pixels[i + 1] - g) + Math.abs(pixels[i + 2] - b) < 12) counts[k]++;
        });
    return counts;
}"""


def test_report_opens_without_errors_in_headless_chromium(validated, tmp_path):
    import base64

    from playwright.sync_api import sync_playwright

    from jobs.quality_report import page as quality_report

    browser_path = subprocess.run(
        [str(REPO / "infra" / "chromium.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()
    locations = validated["locations"]
    root = tmp_path / "root"
    shutil.copytree(validated["root"], root)  # the reports and results only are read: a copy reads the same
    states = _other_pipelines_in_every_state(root, datetime.now(UTC))
    # The latest validation of clickstream (other tests of this module validate its table too).
    last_verdict = max(load_results(locations.runs), key=lambda result: result.validated_at).status
    states["clickstream"] = {"passed": "healthy", "warned": "warning", "failed": "failing"}[last_verdict]
    summary = Path(quality_report.build(str(root)))
    mode, expected_mode = modes(summary)
    assert mode == expected_mode  # readable by its owner and group only (tests/helpers.py modes)
    artifacts = settings().cache_dir / "test-artifacts"  # screenshots, kept after the run
    artifacts.mkdir(parents=True, exist_ok=True)
    reports = load_reports(locations.runs)
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_path, args=flags)
        try:
            page, problems = _open_in_chromium(browser, summary.as_uri(), artifacts / "report-summary.png")
            assert problems == []
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # readable at 1280 px
            # No table needs its own scroll bar either (the runs table was 1,419 px wide).
            too_wide = page.evaluate(
                "[...document.querySelectorAll('table.runs')].filter(t => t.scrollWidth > t.parentElement.clientWidth)"
                ".map(t => t.closest('section').id)"
            )
            assert too_wide == []
            # Late tables and anomalies first, above the overview; a trend in each pipeline's row.
            assert (
                page.locator('#look-first li[data-late="device_steps"]')
                .inner_text()
                .startswith("device_steps is late: no rows appended for 5.0 h")
            )
            assert (
                page.locator('#look-first li[data-anomalies="ad_impressions"]')
                .inner_text()
                .endswith("anomaly: quarantine_share 37.5%, expected 0.0% to 2.0% (the 8 runs before)")
            )
            trends = page.locator("#overview table tbody tr td[data-trend] svg")
            assert trends.count() == len(states)  # every pipeline that ran (clickstream among them)
            assert trends.first.bounding_box()["width"] == 120
            # Every run's row adds up: input = used + quarantined + late + duplicates.
            for row in page.locator("table.runs tbody tr").all():
                count = {c: int(row.locator(f"td.{c}").inner_text()) for c in ("input", "used", "quarantined", "late")}
                duplicates = int(row.locator("td.duplicates").inner_text())
                assert count["input"] == count["used"] + count["quarantined"] + count["late"] + duplicates
            # A run of duplicates only is a whole bar of them, not an empty one.
            duplicates = page.locator('#device_steps svg rect[fill="#5fb8ad"]')
            assert duplicates.count() == 1 and "278 of 278 input rows duplicates" in duplicates.text_content()
            # A long message is folded: its first sentence and the command, the whole one unfolded.
            failed = page.locator("#rack_temperatures table.runs details.message")
            summary = failed.locator("summary").inner_text()
            assert summary == (
                "java.lang.OutOfMemoryError in batch 3: the Spark driver ran out of memory. Commands that help: "
                "python -m jobs run rack_temperatures --max-bytes-per-trigger 64m."
            )
            assert failed.evaluate("d => d.textContent").endswith("--max-bytes-per-trigger 64m`.")
            # Event time years behind now (the sample's 2023 events) is shown as a date, not a lag.
            assert "at 2023-07-30 " in page.locator('#overview tr[data-pipeline="clickstream"]').inner_text()

            # The overview: one row per pipeline that ran, worst first; the others on one line.
            rows = page.locator("#overview table tbody tr")
            shown = {
                rows.nth(i).get_attribute("data-pipeline"): rows.nth(i).get_attribute("data-status")
                for i in range(rows.count())
            }
            assert shown == states
            order = list(STATUSES)
            assert list(shown.values()) == sorted(shown.values(), key=order.index)
            never = set(declare.load_all()) - set(states)
            assert page.locator("#never-run").inner_text().startswith(f"Never run ({len(never)}):")
            assert {
                name.strip(" .") for name in page.locator("#never-run").inner_text().split(":", 1)[1].split(",")
            } == never
            late = page.locator('#overview tr[data-pipeline="device_steps"]').inner_text()
            assert "5.0 h ago" in late and "no rows appended for 5.0 h, freshness 2.0 h (from its schedule)" in late
            assert "5.0 h old / 2.0 h" in late  # the table's age against its freshness
            assert "37.5%" in page.locator('#overview tr[data-pipeline="rack_temperatures"]').inner_text()
            assert "OutOfMemoryError" in page.locator('#overview tr[data-pipeline="rack_temperatures"]').inner_text()
            # The screenshot shows each state's colour.
            png = base64.b64encode(page.locator("#overview").screenshot(path=str(artifacts / "report-overview.png")))
            shown_states = sorted(set(states.values()), key=order.index)
            colours = page.evaluate(_COUNT_COLOURS, [png.decode(), [STATUS_PIXELS[s] for s in shown_states]])
            assert all(count > 50 for count in colours), dict(zip(shown_states, colours, strict=True))

            # Each pipeline's section names its table's format (both kinds are on the page).
            assert "Table (delta): " in page.locator("#rack_temperatures").inner_text()
            assert "Table (parquet): " in page.locator("#clickstream").inner_text()

            # A 37.5% quarantine share is 37.5% of its bar, whatever the bar's row count.
            bar = page.locator("#rack_temperatures svg rect")
            heights = [float(bar.nth(i).get_attribute("height")) for i in range(bar.count())]
            assert len(heights) == 2 and abs(heights[1] / sum(heights) - 0.375) < 0.01

            # One table row per run, newest first, each with its validation verdict.
            rows = page.locator("#clickstream table.runs tbody tr")
            assert rows.count() == len(reports)
            assert rows.first.locator("td").first.inner_text().splitlines()[0] == reports[-1].run_id
            verdicts = [v.status for v in reversed(validated["validations"])]
            assert [rows.nth(i).locator(".badge").nth(1).inner_text() for i in range(len(reports))] == verdicts
            # The chart: one bar segment per non-zero fate of each run that read input.
            fates = [(r.used_rows, r.quarantined_rows, r.late_rows_dropped, r.duplicates_dropped) for r in reports]
            segments = sum(bool(n) for fate in fates for n in fate)
            assert page.locator("#clickstream svg rect").count() == segments
            # Quarantine reasons with their counts, and each check's history.
            quarantined = sum(r.quarantined_rows for r in reports)
            reasons = page.locator("#clickstream h3:has-text('Quarantined records') + table tbody tr")
            assert (
                sum(int(reasons.nth(i).locator("td").nth(1).inner_text()) for i in range(reasons.count()))
                == quarantined
            )
            history = page.locator("#clickstream h3:has-text('Checks') + div table tbody tr")
            assert history.count() == len(validated["validations"][-1].checks)
            # Each row rule's history: its violations in each run (the model's), and their share.
            rules = page.locator("#clickstream table.rules tbody tr")
            declared = [rule.name for rule in validated["spec"].rules]
            assert [rules.nth(i).get_attribute("data-rule") for i in range(rules.count())] == declared
            for i, name in enumerate(declared):
                cells = rules.nth(i).locator("td")
                shown = [cells.nth(c).inner_text() for c in range(2, cells.count())]
                expected = [
                    f"{n} ({100 * n / r.input_rows:.1f}%)" if n else "0"
                    for r, n in zip(
                        [r for r in reports if r.batch_ids],
                        (v.get(name, 0) for v in validated["violations"]),
                        strict=True,
                    )
                ]
                assert shown == expected, name
            overview = page.locator('#overview tr[data-pipeline="clickstream"]').inner_text()
            share = (
                100 * sum(v.get("known_event", 0) for v in validated["violations"]) / sum(r.input_rows for r in reports)
            )
            assert f"known_event {share:.1f}% (quarantine)" in overview.split("rules, 24 h: ")[1]

            docs = root / "reports" / "data_docs" / "index.html"
            page, problems = _open_in_chromium(browser, docs.as_uri(), artifacts / "data-docs-index.png")
            assert problems == []
            assert page.locator("text=clickstream").count() > 0
            for validation in validated["validations"]:
                result_page = root / "reports" / "data_docs" / validation.data_docs_page
                page, problems = _open_in_chromium(browser, result_page.as_uri(), artifacts / "data-docs-result.png")
                assert problems == []
                assert page.locator("text=window_length_s").count() > 0
                # One vocabulary with the report: a warned validation is not "Failed"; no NaN.
                status = page.locator("text=Status:").locator("..").inner_text()
                expected = {"passed": "Succeeded", "warned": "Warned", "failed": "Failed"}[validation.status]
                assert expected in status, (validation.status, status)
                assert "NaN" not in page.content()
        finally:
            browser.close()
