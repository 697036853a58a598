"""Green means green (issue 70): a verdict never says more than was checked. A suite Great
Expectations cannot run, a declaration a run cannot use, a run that used none of its input,
rows a validation never checked: each ends in a refusal or a verdict that says so, never in
a success over rows nobody looked at. Each case is the review's, as a newcomer met it."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import yaml

from jobs import declare
from jobs.exit_codes import ExitCode
from jobs.launch import execute
from jobs.quality_report import health
from jobs.request import RunRequest
from jobs.run.report import load_reports
from jobs.validate.result import load_results
from jobs.validate.suite import expectations_dir
from tests.helpers import declaration_copy, event, land, land_in_order


def _at(report) -> datetime:
    return datetime.fromisoformat(report.started_at)


def _finished(request: RunRequest, spark, pipeline=None):
    return list(execute(request, pipeline=pipeline, spark=spark))[-1]


def test_a_misspelt_expectation_refuses_the_run_before_a_row_is_committed(spark, locations, tmp_path, monkeypatch):
    """Before, the run committed its rows, then died in validation (exit 1, retried), and the
    next run said PASSED over rows never validated."""
    suites = tmp_path / "suites"
    suites.mkdir()
    raw = yaml.safe_load((expectations_dir() / "clickstream.yaml").read_text())
    raw["expectations"].append({"expect": "column_value_to_not_be_null", "column": "user_id"})
    (suites / "clickstream.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("JOBS_EXPECTATIONS_DIR", str(suites))
    land(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:00Z")]})

    ended = _finished(RunRequest("clickstream", locations), spark)

    assert (ended.status, ended.code) == ("refused", ExitCode.USAGE)
    assert "did you mean 'column_values_to_not_be_null'" in ended.error and "\n" not in ended.error
    assert not Path(locations.checkpoint).exists(), "nothing was read, nothing committed"


def test_a_declaration_problem_met_by_run_is_a_refusal_in_one_line(spark, locations, tmp_path, monkeypatch):
    """Before: 'ended by an unexpected error', a traceback and exit 1 (retried by Airflow)."""
    rules = [{"name": "known", "check": "evnt IN ('click')", "on_violation": "quarantine"}]
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(declaration_copy(tmp_path / "pipelines", "clickstream", rules=rules)))

    ended = _finished(RunRequest("clickstream", locations), spark)

    assert (ended.status, ended.code) == ("refused", ExitCode.USAGE)
    assert "field 'evnt' is not in the source schema (did you mean 'event'?)" in ended.error


def test_a_run_that_used_none_of_its_input_is_no_success(spark, locations, tmp_path, monkeypatch):
    """A field's type declared wrong: every row quarantined. Before: succeeded, exit 0."""
    source = declare.load("clickstream").source.model_dump(by_alias=True, exclude_defaults=True)
    source["schema"] = {**source["schema"], "user_id": "long"}
    monkeypatch.setenv(
        "JOBS_PIPELINES_DIR", str(declaration_copy(tmp_path / "pipelines", "clickstream", source=source))
    )
    land(locations.landing, {"a.json": [event(f"u{n}", "2023-07-30T10:00:00Z", f"e{n}") for n in range(5)]})

    ended = _finished(RunRequest("clickstream", locations), spark)

    assert ended.code == ExitCode.UNUSED and not ended.code.worth_retrying
    assert "used none of its 5 rows: all quarantined, most for wrong_field_type (5 rows)" in ended.line()
    # The shipped suite's share check fails over half (fail_above), not only warns; exit 6 stays.
    assert ended.validation == "failed" and "validation failed, exit 6" in ended.line()
    (report,) = load_reports(locations.runs)
    assert (report.status, report.input_rows, report.quarantined_rows) == ("succeeded", 5, 5)  # committed, accounted
    assessed = health.assess("clickstream", "@hourly", [report], load_results(locations.runs), _at(report))
    assert assessed.status == "failing" and assessed.reason.startswith("quality failed")


def test_rows_a_validation_never_checked_are_validated_by_the_next_run(spark, clickstream, locations, monkeypatch):
    """Before, the next run found nothing new and said PASSED (no batch ran); the report said
    healthy over rows never validated."""
    from jobs.validate import validation

    land_in_order(
        locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:00Z"), event("u2", "2023-07-30T10:09:00Z")]}
    )
    checked = validation._validate

    def dies(*args, **kwargs):
        raise RuntimeError("the validation's JVM went away")

    monkeypatch.setattr(validation, "_validate", dies)
    first = _finished(RunRequest("clickstream", locations), spark, clickstream)
    monkeypatch.setattr(validation, "_validate", checked)

    assert (first.validation, first.code) == ("not validated", ExitCode.FAILED)
    (report,) = load_reports(locations.runs)
    assert report.not_validated == "the validation's JVM went away"  # the run report says so
    assessed = health.assess("clickstream", "@hourly", [report], load_results(locations.runs), _at(report))
    assert assessed.status == "not validated" and assessed.reason.endswith("JVM went away)")

    second = _finished(RunRequest("clickstream", locations), spark, clickstream)  # nothing new landed

    assert second.report.batch_ids == [] and second.validation == "passed"
    (result,) = load_results(locations.runs)
    assert result.run_ids == [second.report.run_id, first.report.run_id] and result.rows_validated > 0
    reports = load_reports(locations.runs)
    assessed = health.assess("clickstream", "@hourly", reports, [result], _at(reports[-1]))
    assert assessed.status == "healthy"
    assert json.loads(Path(locations.ledger, "validated.json").read_text()) == {"through_batch": max(report.batch_ids)}
