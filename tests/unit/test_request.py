"""The run request (jobs/request.py): one definition of a run's options, from which the
command line, the DAG's params and spark-submit's arguments are made; a request survives
being written out and read back whole."""

from __future__ import annotations

import argparse
import re
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.cli.parser import build_parser
from jobs.lake.layout import Locations, StorageError
from jobs.request import RunRequest, Trigger, add_arguments, dag_params, from_args
from jobs.units import UsageError

LOCATIONS = Locations.resolve("clickstream", root="/data")

REQUESTS = st.builds(
    RunRequest,
    pipeline=st.just("clickstream"),
    locations=st.just(LOCATIONS),
    mode=st.sampled_from(["incremental", "range-backfill", "rebuild"]),
    trigger=st.sampled_from([Trigger(), Trigger("once"), Trigger("processing-time", 30)]),
    max_files_per_trigger=st.none() | st.integers(1, 10_000),
    landing_glob=st.none() | st.text(min_size=1, max_size=20),
    landing_since=st.none() | st.dates(date(2000, 1, 1), date(2100, 1, 1)),
    from_archive=st.none() | st.tuples(st.text(max_size=10)),
    run_id=st.none() | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True),
    link=st.none() | st.just('https://airflow.example/task?x=<y>&z="1"'),
    validate=st.booleans(),
    start_spark=st.booleans(),
    heap_shares=st.integers(1, 8),
)


@settings(max_examples=100, deadline=None)
@given(REQUESTS)
def test_a_request_read_back_from_its_json_is_the_same_request(request):
    assert RunRequest.from_json(request.to_json()) == request
    (command, whole) = request.argv()
    assert command == "run" and RunRequest.from_json(whole.removeprefix("--request=")) == request


def test_the_command_line_s_options_are_the_request_s():
    run = build_parser().parse_args(
        [
            "run",
            "clickstream",
            "--trigger=once",
            "--max-bytes-per-trigger=64m",
            "--landing-since=2023-07-30",
            "--run-report=/tmp/r.json",
            "--run-id=r1",
            "--link=https://x/y",
            "--no-validate",
        ]
    )
    asked = from_args(run, "clickstream", LOCATIONS)
    assert asked == RunRequest(
        "clickstream",
        LOCATIONS,
        trigger=Trigger("once"),
        max_bytes_per_trigger=64 * 2**20,
        landing_since=date(2023, 7, 30),
        report_path="/tmp/r.json",
        run_id="r1",
        link="https://x/y",
        validate=False,
    )
    older = build_parser().parse_args(["run", "clickstream", "--report=/tmp/r.json"])  # the option's older name
    assert from_args(older, "clickstream", LOCATIONS).report_path == "/tmp/r.json"


def test_the_dag_s_params_are_the_request_s_and_set_it():
    params = dag_params()
    assert set(params) == {"max_files_per_trigger", "max_bytes_per_trigger", "quarantine_file", "quarantine_reason"}
    base = RunRequest("clickstream", LOCATIONS)
    defaults = {name: param.value for name, param in params.items()}
    assert base.with_params(defaults) == base  # a DAG run with no param set asks for what the command line does
    asked = base.with_params(defaults | {"max_bytes_per_trigger": "1g", "quarantine_file": "/l/a.json"})
    assert (asked.max_bytes_per_trigger, asked.quarantine_file) == (2**30, "/l/a.json")
    assert asked.quarantine_reason == "quarantined by hand from Airflow"


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"max_files_per_trigger": 2, "max_bytes_per_trigger": 10}, "one or the other"),
        ({"quarantine_file": "/l/a.json"}, "go together"),
        ({"mode": "plan-ahead"}, "a run's mode is one of"),
    ],
)
def test_a_request_that_cannot_be_is_refused_as_a_usage_error(given, says):
    with pytest.raises(UsageError, match=says):
        RunRequest("clickstream", LOCATIONS, **given)


def test_bad_option_values_are_usage_errors_naming_the_option():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    for argv, says in [
        (["--max-files-per-trigger=0"], "--max-files-per-trigger '0': give 1 or more"),
        (["--landing-since=yesterday"], "--landing-since 'yesterday': use a date"),
        (["--link=javascript:alert(1)"], "--link 'javascript:alert(1)': give an http"),
        (["--trigger=sometimes"], "--trigger 'sometimes'"),
    ]:
        with pytest.raises(UsageError, match=re.escape(says)):
            from_args(parser.parse_args(argv), "clickstream", LOCATIONS)


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        (
            {"run_id": "../../../escaped-run"},
            "--run-id '../../../escaped-run': letters, digits",
        ),  # wrote outside the root
        ({"run_id": "run1\n"}, "--run-id 'run1\\n'"),  # `$` took a trailing newline
        ({"link": "javascript:alert(1)"}, "--link 'javascript:alert(1)': give an http(s) URL"),
        ({"link": "https:///no-host"}, "give an http(s) URL"),
    ],
)
def test_a_request_read_from_json_is_checked_as_the_flags_are(changed, says):
    """`run --request` (and spark-submit's arguments) is a door of its own: it goes through
    the same parsers as the flags."""
    import json

    text = json.loads(RunRequest("clickstream", LOCATIONS).to_json()) | changed
    with pytest.raises(UsageError, match=re.escape(says)):
        RunRequest.from_json(json.dumps(text))


def test_a_request_s_locations_read_from_json_are_normalized_as_the_flags_are():
    import json

    text = json.loads(RunRequest("clickstream", LOCATIONS).to_json())
    text["locations"]["output"] = "s3a://lake/a/../b"
    with pytest.raises(StorageError, match=re.escape("no empty, '.' or '..' parts")):
        RunRequest.from_json(json.dumps(text))
