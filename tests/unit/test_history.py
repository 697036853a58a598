"""The event log's writer and reader without Spark: appends stay few files (compacted every
`TIDY_EVERY` versions), rows past retention go at the next tidy, and `--since` filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from deltalake import DeltaTable

from jobs.history import log, query, rows
from jobs.run.report import RunReport


def _report(number: int, started: datetime) -> RunReport:
    return RunReport(
        run_id=f"{started:%Y%m%dT%H%M%SZ}-{number:06d}",
        pipeline="team_runs",
        trigger="available-now",
        started_at=started.isoformat(),
        input_rows=number,
        status="succeeded",
    )


def test_appends_are_compacted_and_rows_past_retention_go(tmp_path):
    runs = str(tmp_path / "runs" / "team_runs")
    now = datetime.now(UTC)
    for number in range(log.TIDY_EVERY + 1):  # one append (a version) each, as runs make them
        log._append(runs, "runs", rows.run_row(_report(number, now - timedelta(minutes=number))), None)
    table = DeltaTable(log.location(runs, "runs"))
    assert len(table.file_uris()) == 1, "versions 0-100 appended, then compacted into one file"
    recent = query.connect(str(tmp_path), since=now - timedelta(minutes=10, seconds=30)).execute(
        "SELECT count(*) FROM runs"
    )
    assert recent.fetchone()[0] == 11  # started in the last 10.5 minutes: runs 0..10
    # A run past retention (its log's statistics say so) is deleted by the next append, not 100 later.
    log._append(runs, "runs", rows.run_row(_report(999, now - timedelta(days=100))), None)
    assert query.connect(str(tmp_path)).execute("SELECT count(*) FROM runs").fetchone()[0] == log.TIDY_EVERY + 2
    log._append(runs, "runs", rows.run_row(_report(1000, now)), retention_s=90 * 86400)
    kept = query.connect(str(tmp_path)).execute("SELECT input_rows FROM runs ORDER BY input_rows").fetchall()
    assert [n for (n,) in kept] == [*range(log.TIDY_EVERY + 1), 1000]


def test_no_history_yet_is_empty_views(tmp_path):
    history = query.connect(str(tmp_path))
    assert history.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    assert history.execute("SELECT count(*) FROM batches").fetchone()[0] == 0


def test_the_logs_first_append_brings_in_the_runs_reported_before_it(tmp_path):
    from jobs.lake.layout import Locations
    from jobs.run.report import save

    locations = Locations.resolve("team_runs", root=str(tmp_path))
    now = datetime.now(UTC)
    before = [_report(n, now - timedelta(hours=3 - n)) for n in range(3)]  # stored by runs before the log
    for report in before:
        save(report, locations.runs)
    log.record_run(_report(3, now), locations, None)
    log.record_run(_report(4, now + timedelta(seconds=1)), locations, None)  # not again
    history = query.connect(str(tmp_path))
    assert history.execute("SELECT input_rows FROM runs ORDER BY started_at").fetchall() == [(n,) for n in range(5)]


def test_a_run_is_judged_against_the_log_or_before_it_the_reports_and_its_anomalies_are_logged(tmp_path):
    from jobs import declare
    from jobs.declare.operations import Quality
    from jobs.lake.layout import Locations
    from jobs.run.report import save
    from jobs.run.warnings import judge_anomalies

    locations = Locations.resolve("team_runs", root=str(tmp_path))
    now = datetime.now(UTC)
    steady = [_report(1_000 + (n % 3) * 10, now - timedelta(hours=10 - n)) for n in range(9)]
    halved = _report(500, now)
    for report in steady:  # stored by runs before the log: judged against the reports
        save(report, locations.runs)
    events = declare.load("clickstream_enriched")  # an events pipeline: its output is judged too

    def judge(report, quality):
        judge_anomalies(report, events.model_copy(update={"quality": quality}), locations.runs)

    judge(halved, Quality())
    assert [(a.metric, a.value, len(a.compared_runs)) for a in halved.anomalies] == [("input_rows", 500, 9)]
    assert "  anomaly: input_rows 500, expected 808 to 1,212 (the 9 runs before)" in halved.summary()

    log.record_run(halved, locations, None)  # the log's first append: the reports, then this run
    again = _report(505, now + timedelta(minutes=1))
    judge(again, Quality(min_runs=10))  # 10 comparable runs in the log
    assert [a.metric for a in again.anomalies] == ["input_rows"] and len(again.anomalies[0].compared_runs) == 10
    quiet = _report(505, now + timedelta(minutes=2))
    judge(quiet, Quality(anomalies="off"))
    assert quiet.anomalies == []
    logged = query.connect(str(tmp_path)).execute(
        "SELECT a.metric, a.value, len(a.compared_runs) FROM (SELECT unnest(anomalies) AS a FROM runs)"
    )
    assert logged.fetchall() == [("input_rows", 500.0, 9)]
