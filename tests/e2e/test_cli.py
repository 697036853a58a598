"""The command line as users run it: real processes, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from demo import samples
from jobs import declare
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from jobs.settings import settings
from tests.helpers import REPO, event, land, python_cmd


def cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        python_cmd(*args), cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env or os.environ.copy()
    )


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_list_prints_one_name_per_line():
    result = cli("list")
    assert result.returncode == 0
    assert result.stdout.splitlines() == sorted(declare.load_all())
    verbose = cli("list", "--verbose")
    assert "computes   event_count=count(*) per 60s windows, keys [user_id]" in verbose.stdout
    assert verbose.stdout.count("  computes   ") == len(result.stdout.splitlines())


def test_validating_a_table_that_has_no_batch_yet_exits_3_before_spark(tmp_path):
    # A master Spark cannot parse: had a session been started, the command would fail with exit 1.
    result = cli(
        "validate", "rack_alerts", "--all", "--root", str(tmp_path), env={**os.environ, "SPARK_MASTER": "nope"}
    )
    assert result.returncode == 3, result.stderr
    assert "nothing to validate yet: rack_alerts has committed no batch" in result.stderr


def test_help_explains_every_run_option():
    result = cli("run", "--help")
    assert result.returncode == 0
    for option in (
        "--root",
        "--landing",
        "--output",
        "--checkpoint",
        "--quarantine",
        "--trigger",
        "--max-files-per-trigger",
        "--max-bytes-per-trigger",
        "--run-report",
    ):
        assert option in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["run", "nope"], 2, "error: unknown pipeline 'nope'; declared pipelines: ad_clicks, ad_impressions"),
        (["run", "clickstream", "--trigger", "sometimes"], 2, "error: --trigger 'sometimes': use one of"),
        (["run", "clickstream", "--max-bytes-per-trigger", "lots"], 2, "error: size 'lots'"),
        (
            ["run", "clickstream", "--link", "javascript:alert(1)"],
            2,
            "error: --link 'javascript:alert(1)': give an http",
        ),
        (["run", "clickstream", "--root", "/nonexistent/root"], 3, "error: landing location /nonexistent/root/landing"),
    ],
)
def test_bad_input_gives_one_actionable_line(args, code, message):
    result = cli(*args)
    assert result.returncode == code
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(message), result.stderr


def test_missing_java_is_reported_before_anything_starts(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java here
    result = cli("run", "clickstream", "--root", str(tmp_path), env=env)
    assert result.returncode == 3
    assert "Java 17+ is required" in result.stderr


@pytest.mark.slow
def test_run_writes_table_and_reports(tmp_path):
    root = tmp_path / "root"
    land(str(root / "landing" / "clickstream"), {"a.json": [event("u1", "2023-07-30T10:00:20Z"), "{bad"]})
    extra_report = tmp_path / "report.json"

    result = cli("run", "clickstream", "--root", str(root), "--run-report", str(extra_report))

    assert result.returncode == 0, result.stderr
    assert "succeeded" in result.stdout and "quarantined 1" in result.stdout
    report = json.loads(extra_report.read_text())
    stored = json.loads((root / "runs" / "clickstream" / f"{report['run_id']}.json").read_text())
    assert report == stored
    assert (report["input_rows"], report["used_rows"], report["quarantined_rows"]) == (2, 1, 1)
    assert (root / "tables" / "clickstream" / "_spark_metadata").is_dir()
    # Then validated: half the input was quarantined, a `warn` check, so the run still exits 0,
    # and the console names the reason; the window is still open (nothing written): the row
    # count is not checked, rather than a false warning.
    validation = json.loads((root / "runs" / "clickstream" / f"{report['run_id']}.quality.json").read_text())
    assert validation["status"] == "warned"
    checks = {c["name"]: c["success"] for c in validation["checks"]}
    assert [name for name, success in checks.items() if success is False] == ["quarantine_share (run report)"]
    assert checks["table_row_count_to_be_between (table)"] is None
    assert "validation of run" in result.stdout and "WARNED" in result.stdout
    assert "most for malformed_json (1 rows): the records are in " in result.stdout


@pytest.mark.slow
def test_a_delta_pipeline_runs_from_any_folder_with_the_jars_and_archive_of_the_user_s_cache(tmp_path):
    """As a user runs it after `make demo`: from a folder of their own, with no JOBS_CACHE_DIR
    and no JVM options of the test suite; the jars and the class archive are the user's cache's."""
    elsewhere = tmp_path / "elsewhere"
    arrival = samples.arrivals("rack_temperatures")[0]
    land(str(elsewhere / "root" / "landing" / "rack_temperatures"), arrival)
    env = {k: v for k, v in os.environ.items() if k not in ("JOBS_CACHE_DIR", "JAVA_TOOL_OPTIONS")}

    result = subprocess.run(
        python_cmd("run", "rack_temperatures", "--root", "root", "--no-validate"),
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "JVM class archive" not in result.stdout + result.stderr  # found, not made again
    # What the JVM prints itself (the JDK's warning, Spark's log lines) is in the log, not on the console.
    assert "WARNING: Using incubator modules" not in result.stdout + result.stderr
    assert (
        "WARNING: Using incubator modules" in (settings().cache_dir / "logs" / "jobs-rack_temperatures.log").read_text()
    )
    (report,) = load_reports(str(elsewhere / "root" / "runs" / "rack_temperatures"))
    assert (report.status, report.input_rows) == ("succeeded", sum(len(lines) for lines in arrival.values()))
    assert (elsewhere / "root" / "tables" / "rack_temperatures" / "_delta_log").is_dir()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["root"]  # no cache of its own in the folder


@pytest.mark.slow
def test_a_second_run_refuses_while_a_processing_time_run_holds_the_checkpoint(tmp_path):
    root = tmp_path / "root"
    land(str(root / "landing" / "clickstream"), {"a.json": [event("u1", "2023-07-30T10:00:20Z")] * 3})
    first = subprocess.Popen(
        python_cmd("run", "clickstream", "--root", str(root), "--trigger", "processing-time=1s"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        commits = root / "checkpoints" / "clickstream" / "commits"
        wait_for(lambda: (commits / "0").exists(), 120, "the first run's first batch")

        second = cli("run", "clickstream", "--root", str(root))
        assert second.returncode == 3
        assert "error: pipeline 'clickstream' is already running" in second.stderr
        assert f"pid {first.pid}" in second.stderr

        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    reports = load_reports(Locations.resolve("clickstream", root=str(root)).runs)
    statuses = sorted(r.status for r in reports)
    assert statuses == ["refused", "stopped"]
    stopped = next(r for r in reports if r.status == "stopped")
    assert stopped.input_rows == 3 and stopped.trigger == "processing-time=1s"


def _doors(root: Path) -> dict[str, list[str]]:
    """Every command that reads a pipeline's declaration and suite, as a user or a DAG task
    starts it."""
    from jobs.request import RunRequest

    request = RunRequest("clickstream", Locations.resolve("clickstream", root=str(root))).to_json()
    return {
        "run": ["run", "clickstream", "--root", str(root)],
        "run --request": ["run", "--request", request],
        "backfill": ["backfill", "clickstream", "--root", str(root), "--prefix", "dt=2023-07-30"],
        "rebuild": ["rebuild", "clickstream", "--root", str(root)],
        "plan": ["plan", "clickstream", "--root", str(root)],
        "validate": ["validate", "clickstream", "--root", str(root)],
    }


def _files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*")}


@pytest.mark.parametrize("broken", ["declaration", "suite"])
def test_every_door_refuses_a_declaration_or_suite_problem_in_one_line_and_writes_nothing(tmp_path, broken):
    """Before, `run` met a rule naming a missing field as 'ended by an unexpected error', a
    traceback and exit 1 (retried by Airflow), and a misspelt expectation only after the run
    had committed its rows."""
    import yaml

    from jobs.validate.suite import expectations_dir
    from tests.helpers import declaration_copy

    env = os.environ.copy()
    if broken == "declaration":
        rules = [{"name": "known", "check": "evnt IN ('click')", "on_violation": "quarantine"}]
        env["JOBS_PIPELINES_DIR"] = str(declaration_copy(tmp_path / "pipelines", "clickstream", rules=rules))
        said = "field 'evnt' is not in the source schema (did you mean 'event'?)"
    else:
        raw = yaml.safe_load((expectations_dir() / "clickstream.yaml").read_text())
        raw["expectations"].append({"expect": "column_value_to_not_be_null", "column": "user_id"})
        (tmp_path / "suites").mkdir()
        (tmp_path / "suites" / "clickstream.yaml").write_text(yaml.safe_dump(raw))
        env["JOBS_EXPECTATIONS_DIR"] = str(tmp_path / "suites")
        said = "did you mean 'column_values_to_not_be_null'"
    root = tmp_path / "root"
    land(
        Locations.resolve("clickstream", root=str(root)).landing + "/dt=2023-07-30",
        {"a.json": [event("u1", "2023-07-30T10:00:00Z")]},
    )
    before = _files_under(root)

    for door, args in _doors(root).items():
        result = cli(*args, env=env)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert (result.returncode, len(errors)) == (2, 1), (door, result.returncode, result.stderr[-2000:])
        assert said in errors[0] and "Traceback" not in result.stderr + result.stdout, (door, result.stderr)
        assert _files_under(root) == before, (door, _files_under(root) - before)
