"""`python -m jobs validate`: a run's output (or the whole table) checked with Great Expectations."""

from __future__ import annotations

import argparse

from jobs import declare
from jobs.cli.common import add_pipeline, add_table_locations, fail, locations_of
from jobs.exit_codes import ExitCode
from jobs.validate.suite import load_suite


def add_parser(commands) -> None:
    validate = commands.add_parser(
        "validate",
        help="check a run's output (or the whole table) with Great Expectations",
        description=(
            "Validate the rows the latest finished run of PIPELINE committed (or run --run, or the whole "
            "table with --all) against expectations/<pipeline>.yaml, and check the run's row accounting. "
            "Results go to <root>/runs/<pipeline>/<id>.quality.json. Exit 4 when a `fail` check fails."
        ),
    )
    add_pipeline(validate)
    add_table_locations(validate)
    scope = validate.add_mutually_exclusive_group()
    scope.add_argument("--all", action="store_true", help="validate the whole committed table")
    scope.add_argument("--run", metavar="RUN_ID", help="validate this run's output (default: the latest run)")
    validate.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.run.report import has_committed_batches, load_reports
    from jobs.session import check_java
    from jobs.validate.gx import ValidationError
    from jobs.validate.result import result_uri
    from jobs.validate.validation import latest_report, validate_run, validate_table

    pipeline = declare.load(args.pipeline)
    suite = load_suite(pipeline)
    locations = locations_of(args, pipeline)
    check_java()
    try:
        report = None if args.all else latest_report(locations.runs, args.run)
        if args.all and not has_committed_batches(load_reports(locations.runs)):
            # Checked before Spark starts: the data quality DAG asks this of every pipeline.
            raise ValidationError(f"nothing to validate yet: {pipeline.name} has committed no batch")
        # Spark starts only for an output too large for the pandas engine (jobs/validate/small_table.py).
        if report is None:
            result = validate_table(None, pipeline, locations, suite)
        else:
            result = validate_run(None, pipeline, locations, report, suite)
    except ValidationError as error:
        return fail(ExitCode.REFUSED, str(error))
    print(f"  results: {result_uri(locations.runs, result.validation_id)}")
    return ExitCode.INVALID if result.status == "failed" else ExitCode.OK
