"""Expectation suites as data: every table has one, and a broken suite says what is wrong."""

from __future__ import annotations

import pytest
import yaml

from jobs import declare
from jobs.run.report import QuarantineReason, RunReport
from jobs.validate.run_checks import run_report_checks
from jobs.validate.suite import (
    QuarantineShare,
    RowsBalance,
    RunChecks,
    Suite,
    expectations_dir,
    load_suite,
    parse_suite,
)


@pytest.mark.parametrize("name", sorted(declare.load_all()))
def test_every_declared_pipeline_has_a_suite_that_loads(name):
    suite = load_suite(declare.load(name))
    assert suite.table == name
    assert {e.severity for e in suite.expectations} <= {"fail", "warn"}


def test_suite_references_take_values_from_the_declaration(clickstream):
    suite = load_suite(clickstream)
    by_name = {e.check_name: e for e in suite.expectations}
    length = by_name["column_values_to_be_between (window_length_s)"]
    assert (length.kwargs["min_value"], length.kwargs["max_value"]) == (60, 60)
    assert by_name["compound_columns_to_be_unique (window_start, user_id)"].severity == "fail"
    assert by_name["table_row_count_to_be_between (table)"].when == "run_had_input"


def _raw() -> dict:
    return yaml.safe_load((expectations_dir() / "clickstream.yaml").read_text())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r["expectations"][0].update(severity="critical"), "severity 'critical': use one of fail, warn"),
        (lambda r: r["expectations"][3].update(min_value="$window"), "$window is not a declared value"),
        (lambda r: r["expectations"][2].update(column="userid"), "column 'userid' is not in table clickstream"),
        (lambda r: r.update(table="clicks"), "table 'clicks' does not match the pipeline 'clickstream'"),
        (lambda r: r["expectations"].append(dict(r["expectations"][0])), "declared twice"),
        (lambda r: r["expectations"][6].update(when="always"), "when 'always': use one of run_had_input"),
        (lambda r: r["run_checks"].update(quarantine_share={"max": 5}), "a share between 0 and 1"),
        (
            lambda r: r["run_checks"].update(row_balance={}),
            r"run_checks: unknown setting 'row_balance' \(did you mean 'rows_balance'\?\)",
        ),
        (lambda r: r["expectations"].append({"column": "user_id"}), "expectations #8: needs 'expect'"),
    ],
)
def test_broken_suites_are_refused_with_the_reason(clickstream, change, message):
    raw = _raw()
    change(raw)
    with pytest.raises(declare.DeclarationError, match=message if "\\" in message else _literal(message)):
        parse_suite(raw, clickstream)


def test_a_misspelt_column_in_a_suite_says_the_column_it_is_spelt_like(clickstream):
    raw = _raw()
    raw["expectations"][2]["column"] = "userid"
    raw["expectations"][4]["column"] = "event_cnt"
    with pytest.raises(declare.DeclarationError) as refused:
        parse_suite(raw, clickstream)
    columns = "(event_count, user_id, window_date, window_end, window_length_s, window_start)"
    assert str(refused.value).split("; ") == [
        f"suite expectations #3: column 'userid' is not in table clickstream {columns} (did you mean 'user_id'?)",
        f"suite expectations #5: column 'event_cnt' is not in table clickstream {columns} "
        "(did you mean 'event_count'?)",
    ]


def _literal(message: str) -> str:
    return message.replace("$", r"\$").replace("(", r"\(")


def _report(input_rows: int, used: int, quarantined: int, late: int) -> RunReport:
    counts = {"input_rows": input_rows, "used_rows": used, "quarantined_rows": quarantined, "late_rows_dropped": late}
    return RunReport(
        run_id="r", pipeline="clickstream", trigger="available-now", started_at="2026-01-01T00:00:00", **counts
    )


SUITE = Suite(
    table="clickstream",
    run_checks=RunChecks(
        rows_balance=RowsBalance(severity="fail"), quarantine_share=QuarantineShare(severity="warn", max=0.05)
    ),
)


def test_run_checks_pass_when_rows_balance_and_little_is_quarantined():
    balance, share = run_report_checks(SUITE, [_report(100, 90, 5, 5)])
    assert balance.success and balance.message == "input rows 100 = used 90 + quarantined 5 + late 5"
    assert share.success and share.message == "5 of 100 input rows quarantined (5.0%, at most 5.0%)"


def test_run_checks_catch_unaccounted_rows_and_a_large_quarantine():
    balance, share = run_report_checks(SUITE, [_report(100, 80, 6, 5), _report(10, 10, 0, 0)])
    assert balance.success is False and balance.severity == "fail"
    assert balance.message.endswith("9 rows unaccounted for")
    assert share.success is False and share.severity == "warn"
    assert share.message.startswith("6 of 110 input rows quarantined (5.5%")


def test_no_input_is_no_quarantine():
    balance, share = run_report_checks(SUITE, [_report(0, 0, 0, 0)])
    assert balance.success and share.success


def test_a_share_over_its_threshold_names_the_reason_most_rows_were_quarantined_for():
    wrong_type = _report(300, 228, 72, 0).model_copy(
        update={
            "quarantine_reasons": {
                "type_mismatch:event_id": QuarantineReason(rows=70, last_batch=2),
                "rule:known_event": QuarantineReason(rows=2, last_batch=1),
            },
            "locations": {"quarantine": "/r/quarantine/clickstream"},
        }
    )
    _, share = run_report_checks(SUITE, [wrong_type])
    assert share.success is False
    assert share.message == (
        "72 of 300 input rows quarantined (24.0%, at most 5.0%); most for type_mismatch:event_id (70 rows): "
        "the records are in /r/quarantine/clickstream/batch_id=2"
    )


def test_a_share_over_fail_above_fails_a_warn_check_and_one_under_it_warns():
    """The shipped suites warn over 5% (the samples quarantine that much on purpose) and fail
    over half: the review's run, a field's type declared wrong, quarantined every row."""
    suite = Suite(
        table="clickstream",
        run_checks=RunChecks(quarantine_share=QuarantineShare(severity="warn", max=0.05, fail_above=0.5)),
    )
    (warned,) = run_report_checks(suite, [_report(100, 60, 40, 0)])
    (failed,) = run_report_checks(suite, [_report(100, 49, 51, 0)])
    (half,) = run_report_checks(suite, [_report(100, 50, 50, 0)])
    assert (warned.success, warned.severity) == (False, "warn")
    assert warned.message == "40 of 100 input rows quarantined (40.0%, at most 5.0%)"
    assert (failed.success, failed.severity) == (False, "fail")
    assert failed.message == "51 of 100 input rows quarantined (51.0%, over 50.0%, which fails)"
    assert half.severity == "warn", "over, not at"


def test_a_misspelt_fail_above_is_refused_with_the_setting_meant(clickstream):
    raw = _raw()
    raw["run_checks"] = {"quarantine_share": {"max": 0.05, "fail_abov": 0.5}}
    with pytest.raises(declare.DeclarationError) as refused:
        parse_suite(raw, clickstream)
    assert "did you mean 'fail_above'?" in str(refused.value)


@pytest.mark.parametrize(
    ("fail_above", "message"),
    [
        (0.01, "fail_above 0.01 is under max 0.05: it is the higher share"),
        (2, "needs fail_above, a share between 0 and 1"),
    ],
)
def test_fail_above_is_a_share_over_max(clickstream, fail_above, message):
    raw = _raw()
    raw["run_checks"] = {"quarantine_share": {"max": 0.05, "fail_above": fail_above}}
    with pytest.raises(declare.DeclarationError) as refused:
        parse_suite(raw, clickstream)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("expectation", "message"),
    [
        (  # a misspelling the review made: loaded, then failed after the run committed its rows
            {"expect": "column_value_to_not_be_null", "column": "user_id"},
            "expect 'column_value_to_not_be_null': Great Expectations has no such expectation "
            "(did you mean 'column_values_to_not_be_null'?)",
        ),
        (
            {"expect": "column_values_to_not_be_null", "column": "user_id", "mostlyy": 0.9},
            "expect 'column_values_to_not_be_null' takes no mostlyy (did you mean 'mostly'?)",
        ),
        ({"expect": "column_values_to_be_in_set", "column": "user_id"}, "needs value_set"),
    ],
)
def test_an_expectation_and_its_arguments_are_checked_against_great_expectations_when_the_suite_loads(
    clickstream, expectation, message
):
    raw = _raw()
    raw["expectations"].append(expectation)
    with pytest.raises(declare.DeclarationError) as refused:
        parse_suite(raw, clickstream)
    assert message in str(refused.value)


def test_every_mistake_of_a_suite_is_a_problem_of_its_own(clickstream):
    """A console prints each problem on a line of its own: a suite with three mistakes is three."""
    raw = _raw()
    raw["expectations"] += [
        {"expect": "column_value_to_not_be_null", "column": "user_id"},
        {"expect": "column_values_to_not_be_null", "colum": "user_id"},
    ]
    raw["run_checks"] = {"quarantine_share": {"max": 5}}
    with pytest.raises(declare.DeclarationError) as refused:
        parse_suite(raw, clickstream, "s.yaml")
    assert len(refused.value.problems) == 3, refused.value.problems
    assert [p.split(":")[0] for p in refused.value.problems] == [
        f"s.yaml expectations #{len(raw['expectations']) - 1}",
        f"s.yaml expectations #{len(raw['expectations'])}",
        "s.yaml run_checks quarantine_share max",
    ]


def test_the_expectations_a_suite_is_checked_against_are_the_locked_great_expectations_s():
    """jobs/validate/gx_expectations.json, written by infra/gx_registry.py from GX's registry."""
    from infra.gx_registry import registry
    from jobs.validate.suite import gx_expectations

    assert gx_expectations() == registry()
