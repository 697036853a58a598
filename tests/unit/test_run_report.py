"""Run reports: their sums, their summary, and stored reports of every format version."""

from __future__ import annotations

from jobs.accounting.accounts import BatchAccount
from jobs.run.report import REPORT_VERSION, RunReport

V1 = {  # as stored before report_version existed: `aggregated_rows` for the rows used
    "run_id": "20260101T000000Z-abc",
    "pipeline": "clickstream",
    "trigger": "available-now",
    "started_at": "2026-01-01T00:00:00+00:00",
    "status": "succeeded",
    "batch_ids": [0, 1],
    "batches": 2,
    "input_rows": 10,
    "aggregated_rows": 7,
    "quarantined_rows": 2,
    "late_rows_dropped": 1,
    "duplicates_dropped": 0,
    "output_rows": 3,
}


def test_a_version_1_report_reads_with_its_used_rows():
    report = RunReport.model_validate(V1)
    assert (report.used_rows, report.report_version) == (7, REPORT_VERSION)
    assert report.rows_balance
    assert "aggregated_rows" not in report.to_dict()


def test_batches_add_up_and_an_unknown_count_stays_unknown():
    report = RunReport(run_id="r", pipeline="p", trigger="once", started_at="2026-01-01T00:00:00+00:00")
    account = {"late_watermark_ms": 0, "input_files": 1, "quarantined_rows": 1, "late_rows_dropped": 0}
    report.add_batches(
        [
            BatchAccount(batch_id=0, input_rows=4, used_rows=3, output_rows=2, **account),
            BatchAccount(batch_id=1, input_rows=3, used_rows=1, output_rows=None, duplicates_dropped=None, **account),
        ]
    )
    assert (report.batches, report.input_rows, report.used_rows, report.quarantined_rows) == (2, 7, 4, 2)
    assert report.output_rows is None and report.duplicates_dropped is None
    report.finish("succeeded")
    assert "used 4 + quarantined 2 + late 0 + duplicates unknown (of 7 input rows)" in report.summary()
    assert "output rows unknown" in report.summary()


def test_a_version_1_batch_account_reads_too():
    stored = {"batch_id": 3, "late_watermark_ms": 5, "input_files": 1, "input_rows": 2, "aggregated_rows": 2}
    account = BatchAccount.model_validate({**stored, "quarantined_rows": 0, "late_rows_dropped": 0, "output_rows": 1})
    assert account.used_rows == 2


def test_the_code_a_report_says_is_the_code_the_run_ended_with():
    """What an Airflow task reads of a run when spark-submit's exit status says little."""
    from jobs.exit_codes import ExitCode
    from jobs.run.events import reported_code

    ran = RunReport.model_validate(V1)
    assert reported_code(ran, "passed") == ExitCode.OK
    assert reported_code(ran, "failed") == ExitCode.INVALID
    # Its validation did not finish: exit 1 (retried: the retry's validation checks its rows).
    assert reported_code(ran.model_copy(update={"not_validated": "the JVM went away"})) == ExitCode.FAILED
    unused = ran.model_copy(update={"used_rows": 0, "late_rows_dropped": 0, "quarantined_rows": 10})
    assert reported_code(unused, "passed") == ExitCode.UNUSED
    assert reported_code(unused, "failed") == ExitCode.UNUSED  # its share check fails (fail_above): 6 says more
