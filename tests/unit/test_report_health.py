"""The data quality report's overview: each pipeline's status from its run reports and
validation results (a table past its freshness: late), and whole-table checks marked stale
once the table has grown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobs.history import freshness
from jobs.history.anomalies import Anomaly
from jobs.quality_report import health
from jobs.quality_report.page import stale_checks
from jobs.run import warnings
from jobs.run.report import RuleCount, RunReport
from jobs.validate.result import ValidationResult

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def run(minutes_ago: float, status: str = "succeeded", rows: int = 10, quarantined: int = 0, **fields) -> RunReport:
    started = NOW - timedelta(minutes=minutes_ago)
    return RunReport(
        run_id=f"{started:%Y%m%dT%H%M%SZ}-r",
        pipeline="p",
        trigger="available-now",
        started_at=started.isoformat(timespec="seconds"),
        status=status,
        input_rows=rows,
        used_rows=rows - quarantined,
        quarantined_rows=quarantined,
        batch_ids=[0] if rows else [],
        output_rows=rows,
        **fields,
    )


def check(report: RunReport, status: str, minutes_ago: float = 0, scope: str = "run", run_ids=None):
    return ValidationResult(
        pipeline="p",
        scope=scope,
        validation_id=report.run_id if scope == "run" else f"table-{minutes_ago}",
        run_ids=run_ids or [report.run_id],
        validated_at=(NOW - timedelta(minutes=minutes_ago)).isoformat(timespec="seconds"),
        status=status,
    )


@pytest.mark.parametrize(
    ("schedule", "seconds"),
    [("@hourly", 3600), ("@daily", 86400), ("*/15 * * * *", 900), ("0 6,18 * * *", 12 * 3600), (None, None)],
)
def test_a_schedule_interval_is_its_longest_gap(schedule, seconds):
    assert freshness.schedule_interval_s(schedule) == seconds


def test_each_status_and_its_reason():
    def status(runs, results=(), schedule="@hourly"):
        found = health.assess("p", schedule, list(runs), list(results), NOW)
        return found.status, found.reason

    assert status([]) == ("never run", "no run yet")
    ok = run(10)
    assert status([ok], [check(ok, "passed")]) == ("healthy", "the last run succeeded, validation passed")
    assert status([ok], [check(ok, "warned")])[0] == "warning"
    assert status([ok], [check(ok, "failed")])[0] == "failing"
    assert status([ok, run(5, "failed", error="boom")]) == ("failing", "the last run failed: boom")
    assert status([run(5, "refused", error="held")]) == ("warning", "the last run was refused: held")
    old = run(150)
    late = "no rows appended for 2.5 h, freshness 2.0 h (from its schedule)"
    assert status([old], [check(old, "passed")]) == ("late", late)
    assert status([old], [check(old, "passed")], schedule=None)[0] == "healthy"  # run by hand: no freshness
    on_arrival = health.assess("p", "on_arrival", [old], [check(old, "passed")], NOW, at_least_every_s=3600)
    assert (on_arrival.status, on_arrival.reason) == ("late", late)
    assert status([old], [check(old, "passed")], schedule="@daily")[0] == "healthy"


def test_a_table_is_late_from_its_last_append_not_its_last_run():
    """Freshness: a run that appends nothing does not make a table fresh; a declared
    `freshness` holds whatever the schedule (jobs/history/freshness.py)."""
    appended, quiet = run(150), run(5, rows=0)
    checks = [check(appended, "passed"), check(quiet, "passed")]
    found = health.assess("p", "@hourly", [appended, quiet], checks, NOW)
    assert (found.status, found.reason) == ("late", "no rows appended for 2.5 h, freshness 2.0 h (from its schedule)")
    assert found.age_s == 300 and found.freshness.last_append == NOW - timedelta(minutes=150)
    assert health.assess("p", "@hourly", [appended, quiet], checks, NOW, freshness_s=3 * 3600).status == "healthy"
    by_hand = health.assess("p", None, [run(20)], [check(run(20), "passed")], NOW, freshness_s=600)
    assert (by_hand.status, by_hand.reason) == ("late", "no rows appended for 20 min, freshness 10 min")
    never = health.assess("p", None, [run(90, rows=0)], [], NOW, freshness_s=3600)
    assert (never.status, never.reason) == ("late", "no rows appended since its first run 1.5 h ago, freshness 1.0 h")
    unknown = run(30).model_copy(update={"output_rows": None})  # a count not known: it committed a batch
    assert freshness.appended(unknown) and not freshness.appended(unknown.model_copy(update={"batch_ids": []}))


def test_rows_no_validation_checked_are_not_validated_until_one_does():
    """Before, a validation that died after its run committed, then a run with nothing new
    (`PASSED, no batch ran`), showed the pipeline healthy over rows never validated."""
    why = "expect_column_value_to_not_be_null: Great Expectations has no such expectation"
    committed, nothing_new = run(20, not_validated=why), run(10, rows=0)
    found = health.assess("p", "@hourly", [committed, nothing_new], [check(nothing_new, "passed")], NOW)
    assert found.status == "not validated" and f"run {committed.run_id} the last" in found.reason
    assert found.reason.endswith(f"(run {committed.run_id}'s validation did not finish: {why})")
    later = run(5)  # its validation checked the earlier run's rows too
    found = health.assess(
        "p",
        "@hourly",
        [committed, nothing_new, later],
        [check(later, "passed", run_ids=[later.run_id, committed.run_id])],
        NOW,
    )
    assert found.status == "healthy"


def test_a_run_that_used_none_of_its_input_is_quality_failed_until_one_uses_rows():
    """Before, a run whose every row was quarantined (a field's type declared wrong) succeeded."""
    unused = run(
        20, rows=7702, quarantined=7702, quarantine_reasons={"wrong_field_type": {"rows": 7702, "last_batch": 0}}
    )
    found = health.assess("p", "@hourly", [unused], [check(unused, "passed")], NOW)
    assert (found.status, found.reason) == (
        "failing",
        f"quality failed: run {unused.run_id} used none of its 7,702 rows: all quarantined, most for "
        "wrong_field_type (7,702 rows)",
    )
    fixed = run(5)
    assert (
        health.assess("p", "@hourly", [unused, fixed], [check(unused, "passed"), check(fixed, "passed")], NOW).status
        == "healthy"
    )


def test_the_overview_figures():
    watermark = (NOW - timedelta(minutes=90)).isoformat()
    runs = [run(60 * 30, rows=1000, quarantined=500), run(60, rows=800, quarantined=300, watermark=watermark), run(5)]
    found = health.assess("p", "@hourly", runs, [], NOW)
    assert (found.age_s, found.watermark_lag_s, found.verdict) == (300, 5400, None)
    assert (found.rows_24h, found.quarantined_24h) == (810, 300)  # the run 30 hours ago is out
    assert found.quarantine_share == pytest.approx(300 / 810)
    assert [health.duration(s) for s in (None, 42, 300, 5400, 3 * 86400, 800 * 86400)] == [
        "-",
        "42 s",
        "5 min",
        "1.5 h",
        "3.0 d",
        "2.2 y",
    ]


def test_the_overview_gives_each_broken_rule_s_share_of_the_last_day_s_rows_most_first():
    def rules(**counts: tuple[str | None, int]) -> dict:
        return {name: RuleCount(action=action, violations=n) for name, (action, n) in counts.items()}

    runs = [
        run(60 * 30, rows=1000, rules=rules(known_event=("quarantine", 900))),  # 30 hours ago: out
        run(60, rows=600, rules=rules(known_event=("warn", 6), has_id=("warn", 30), no_test=("fail", 0))),
        run(5, rows=400, rules=rules(known_event=("quarantine", 14), has_id=("warn", 0))),
    ]
    found = health.assess("p", "@hourly", runs, [], NOW)
    assert found.rule_shares == ["has_id 3.0% (warn)", "known_event 2.0% (quarantine)"]  # its latest action


def test_a_whole_table_check_is_stale_once_a_later_run_appended_rows():
    first, second, quiet = run(60), run(30), run(10, rows=0)
    table_check = check(first, "passed", minutes_ago=45, scope="table", run_ids=[first.run_id])
    assert stale_checks([first, second, quiet], [table_check]) == {table_check.validation_id: 1}
    covering = check(second, "passed", minutes_ago=20, scope="table", run_ids=[first.run_id, second.run_id])
    assert stale_checks([first, second, quiet], [covering]) == {covering.validation_id: 0}  # nothing appended since


def test_a_pipeline_whose_runs_went_wrong_is_not_healthy_and_the_overview_says_why():
    def found(runs):
        validated = [check(r, "passed") for r in runs]  # the runs' own rows passed: what else is wrong
        assessed = health.assess("p", "@hourly", runs, validated, NOW)
        return assessed.status, assessed.reason

    year_9999 = "9999-12-31T23:54:00Z"
    status, reason = found([run(20), run(10, watermark=year_9999)])
    assert status == "warning"
    assert reason.startswith("watermark_ahead: the watermark 9999-12-31T23:54:00Z is 7972.9 y ahead of now")

    late = [run(30), *(run(m, rows=100, late_rows_dropped=90) for m in (20, 10))]
    assert found(late) == ("warning", "mostly_late: the last 3 run(s) with input dropped 180 of 210 rows as late")

    # Its latest run with input had an anomaly (jobs/history/anomalies.py): a later run without
    # input does not hide it.
    anomaly = Anomaly(metric="input_rows", value=50, expected_low=80, expected_high=120, compared_runs=["a"] * 8)
    anomalous = run(20, rows=50)
    anomalous.anomalies = [anomaly]
    assert found([run(30), anomalous, run(10, rows=0)]) == ("warning", anomaly.describe())
    assert found([run(30), run(20)])[0] == "healthy"


def test_a_run_report_carries_its_warnings_into_its_summary():
    report = run(0, watermark="9999-12-31T23:54:00Z")
    report.finish("succeeded")
    report.warnings = warnings.run_warnings([report], NOW)
    assert "  warning: watermark_ahead: the watermark 9999-12-31T23:54:00Z is " in report.summary()


def test_the_overview_names_late_tables_and_anomalies_first_and_draws_each_trend(tmp_path):
    """The page (no Spark: rendered from stored run reports): a late table and a pipeline
    whose latest run has anomalies are listed above the overview, and each pipeline's row
    draws its rows and quarantine share over its latest runs (a red dot: a run with anomalies)."""
    from jobs.lake.layout import Locations
    from jobs.quality_report.chart import TREND_RUNS
    from jobs.quality_report.page import render
    from jobs.run.report import save

    now = datetime.now(UTC)
    root = str(tmp_path / "root")
    clicks = Locations.resolve("clickstream", root=root).runs
    runs = [run(10 * (25 - n), rows=100 + n, quarantined=n % 3) for n in range(25)]
    halved = Anomaly(metric="input_rows", value=62, expected_low=99, expected_high=149, compared_runs=["a"] * 8)
    runs[-1] = runs[-1].model_copy(update={"input_rows": 62, "used_rows": 62, "anomalies": [halved]})
    for report in runs:
        save(
            report.model_copy(
                update={"started_at": (now - (NOW - datetime.fromisoformat(report.started_at))).isoformat()}
            ),
            clicks,
        )
    steps = Locations.resolve("device_steps", root=root).runs
    save(
        run(0).model_copy(update={"pipeline": "device_steps", "started_at": (now - timedelta(hours=5)).isoformat()}),
        steps,
    )

    page = render(root)
    look_first = page[page.index('<ul id="look-first">') : page.index("</ul>")]
    assert 'data-late="device_steps"' in look_first
    assert "no rows appended for 5.0 h, freshness 2.0 h (from its schedule)" in look_first
    assert f"run {runs[-1].run_id}: anomaly: input_rows 62, expected 99 to 149 (the 8 runs before)" in look_first
    row = page[page.index('<tr data-pipeline="clickstream"') :]
    trend = row[row.index("<td data-trend>") : row.index("</td>", row.index("<td data-trend>"))]
    rows_line = trend[trend.index('<polyline points="') + 18 :].split('"')[0]
    assert len(rows_line.split()) == TREND_RUNS  # the latest 20 runs with input
    assert trend.count("<circle") == 1 and "rows 105 to 62 (most 123)" in trend
