"""`python -m jobs plan`: what the declaration, as it is now, means against the pipeline's checkpoint and table."""

from __future__ import annotations

import argparse
import json

from jobs import declare
from jobs.cli.common import add_pipeline, add_table_locations, locations_of
from jobs.exit_codes import ExitCode


def add_parser(commands) -> None:
    plan = commands.add_parser(
        "plan",
        help="what a changed declaration means: the run resumes, or every file must be read again",
        description=(
            "Compare the declaration with what the pipeline's checkpoint was started with, and say whether "
            "the next run resumes it or the checkpoint cannot resume (naming each change); the table's columns "
            "now and after; how many landed and archived files (and bytes) reading everything again would read, "
            "and which files read before retention deleted. Reads the ledger, the table's schema and the "
            "listings; Spark only analyses the flow (no Spark job). Exit code 0 when the run resumes or is "
            "the first, 3 when the checkpoint cannot resume."
        ),
    )
    add_pipeline(plan)
    add_table_locations(plan)
    plan.add_argument("--landing", metavar="URI", help="the landing location (default: <root>/landing/<pipeline>)")
    plan.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    plan.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.change.plan import REPROCESS, plan
    from jobs.run.application import Application
    from jobs.validate.suite import load_suite

    pipeline = declare.load(args.pipeline)
    load_suite(pipeline)  # what the next run would refuse, plan refuses too
    locations = locations_of(args, pipeline)
    spark = Application.for_command(f"jobs-plan-{pipeline.name}", [pipeline], [locations]).session()
    found = plan(spark, pipeline, locations)
    print(json.dumps(found.as_dict()) if args.json else "\n".join(found.lines()))
    return ExitCode.REFUSED if found.verdict == REPROCESS else ExitCode.OK
