"""`python -m jobs backfill`: a closed range of landed data reprocessed into a work root of
its own, staged, validated, then published at once, or for a Delta table written over the
range in the production table in one commit (jobs/backfill/); `--rollback` undoes that."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from jobs import declare
from jobs.backfill.options import BACKFILL_OPTIONS
from jobs.cli.common import add_pipeline, add_root, fail
from jobs.exit_codes import ExitCode
from jobs.lake.builds import in_use
from jobs.lake.layout import Locations
from jobs.units import jobs_command, new_run_id
from jobs.validate.suite import load_suite


def add_parser(commands) -> None:
    backfill = commands.add_parser(
        "backfill",
        help="reprocess a closed range of landed data into its own location, then publish it",
        description=(
            "Reprocess the landed files of a date range (the landing's dt=YYYY-MM-DD folders) or of "
            "some prefixes into <root>/backfills/<pipeline>/<id>/, with its own checkpoint: the "
            "production checkpoint and table are never touched. Every window of the range is kept, "
            "including the last ones an open-ended stream would still hold. The result is staged as "
            "<publish-to>/versions/<id>/, validated, then published by pointing "
            "<publish-to>/_CURRENT.json at it (one atomic write). For a Delta table (without --publish-to) "
            "the validated rows of the range's dates replace the production table's in one commit, while "
            "its runs go on; `--rollback --id ID` writes the range back as it was before, in one commit."
        ),
    )
    add_pipeline(backfill)
    add_root(backfill, help="where the production landing is")
    for option in BACKFILL_OPTIONS:  # the DAG's params too (jobs/orchestration/factory.py)
        kind = {"action": "append"} if option.repeated else {}
        if "integer" in option.schema["type"]:
            kind["type"] = int
        backfill.add_argument(option.flag, dest=option.name, metavar=option.metavar, help=option.help, **kind)
    backfill.add_argument("--id", metavar="ID", help="the backfill's id; the same id resumes an interrupted backfill")
    backfill.add_argument(
        "--stage-only", action="store_true", help="stop after staging (the Airflow DAG validates and publishes)"
    )
    backfill.add_argument(
        "--replace-only",
        action="store_true",
        help="only write the staged, validated range over the Delta table's (the Airflow DAG's last step)",
    )
    backfill.add_argument(
        "--rollback",
        action="store_true",
        help="with --id: undo that backfill's replacement of a Delta table's range (within its time travel)",
    )
    backfill.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs import backfill
    from jobs.session import check_java

    if args.rollback:
        return _roll_back(args)
    params = {"pipeline": args.pipeline, **{option.name: getattr(args, option.name) for option in BACKFILL_OPTIONS}}
    try:
        request = backfill.backfill_request(
            {k: v for k, v in params.items() if v is not None},
            root=args.root,
            allowed_roots=backfill.publish_roots(args.root),
            backfill_id=args.id or new_run_id(datetime.now(UTC)),
        )
    except backfill.BackfillError as error:
        return fail(ExitCode.USAGE, str(error))
    pipeline = declare.load(request.pipeline)
    suite = load_suite(pipeline)
    for warning in request.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{request.pipeline}: backfill {request.backfill_id} of {request.to_params()}")
    print(f"  work root {request.work_root} (own checkpoint), staging {request.stage}")
    check_java()
    production = in_use(request.pipeline, request.root) if request.into_table else None  # the table a range replaces
    if production is not None:
        from jobs.backfill.replace import refuse_unless_replaceable

        try:
            refuse_unless_replaceable(pipeline, request, production)  # before any Spark work
        except backfill.BackfillError as error:
            return fail(ExitCode.REFUSED, str(error))
        print(f"  then replaces {request.since} .. {request.until} in the production table {production.output}")
    elif args.replace_only:
        return fail(ExitCode.USAGE, "--replace-only is for a Delta table's backfill without --publish-to")
    if args.replace_only:
        return _replace(request, pipeline, production)
    refused = _reprocess(request)
    if refused is not None:
        return refused
    return _stage_and_publish(request, pipeline, suite, production, stage_only=args.stage_only)


def _reprocess(request) -> int | None:
    """The range reprocessed into the work root; an exit code when that did not succeed."""
    from jobs.backfill.stage import reprocess

    finished = reprocess(request)
    if finished.code == ExitCode.OK:
        return None
    if finished.code in (ExitCode.REFUSED, ExitCode.STOPPED):
        return fail(finished.code, finished.error) if finished.code == ExitCode.REFUSED else finished.code
    return fail(finished.code, f"backfill {finished.error}")


def _stage_and_publish(
    request, pipeline: declare.PipelineBase, suite, production: Locations | None, *, stage_only: bool
) -> int:
    from jobs import backfill
    from jobs.backfill.stage import stage_closed_range
    from jobs.run.application import Application
    from jobs.validate.validation import validate_table

    name = f"jobs-backfill-{pipeline.name}"
    spark = Application.for_command(name, [pipeline], [request.locations], [request.publish_to]).session()
    summary = stage_closed_range(spark, pipeline, request.locations, request.stage)
    print(
        f"  staged {summary['rows']} rows: {summary['emitted_rows']} windows the watermark closed during the run "
        f"+ {summary['held_rows']} last windows from state; windows {summary['first_window']} .. "
        f"{summary['last_window']}"
    )
    if stage_only:
        return ExitCode.OK
    staged = Locations.resolve(pipeline.name, root=request.work_root, output=request.stage)
    if validate_table(spark, pipeline, staged, suite).status == "failed":
        return fail(ExitCode.INVALID, f"the staged result failed validation; not published ({request.stage})")
    if production is not None:
        return _replace(request, pipeline, production, spark)
    pointer = backfill.publish(request)
    print(f"  published: {request.publish_to}/{backfill.POINTER} -> {pointer['path']}")
    return ExitCode.OK


def _replace(request, pipeline: declare.PipelineBase, production: Locations, spark=None) -> int:
    """The staged range written over the production table's, in one commit."""
    from jobs.backfill.replace import replace_range
    from jobs.lake.locks import AlreadyRunning
    from jobs.run.application import Application

    spark = spark or Application.for_command(f"jobs-backfill-{pipeline.name}", [pipeline], [production]).session()
    try:
        done = replace_range(spark, pipeline, request, production)
    except AlreadyRunning as error:
        return fail(ExitCode.REFUSED, f"{error}; the staged range is kept: run again with --replace-only")
    print(
        f"  replaced {request.since} .. {request.until} in {production.output}: version {done['version']} "
        f"({done['rows_written']} rows; {done['rows_left_out']} staged rows of other dates left out); "
        "undo: "
        + jobs_command("backfill", pipeline.name, "--root", request.root, "--id", request.backfill_id, "--rollback")
    )
    return ExitCode.OK


def _roll_back(args: argparse.Namespace) -> int:
    """Undo backfill --id's replacement of the range, in one commit."""
    from jobs import backfill
    from jobs.backfill.replace import roll_back
    from jobs.lake.locks import AlreadyRunning
    from jobs.run.application import Application

    if not args.id:
        return fail(ExitCode.USAGE, "--rollback needs the --id of the backfill to undo")
    from jobs.backfill.request import work_root_of
    from jobs.lake.layout import normalize

    pipeline = declare.load(args.pipeline)
    production = in_use(pipeline.name, args.root)
    work_root = work_root_of(normalize(args.root), pipeline.name, args.id)
    spark = Application.for_command(f"jobs-backfill-rollback-{pipeline.name}", [pipeline], [production]).session()
    try:
        done = roll_back(spark, pipeline, work_root, args.id, production)
    except (backfill.BackfillError, AlreadyRunning) as error:
        return fail(ExitCode.REFUSED, str(error))
    print(f"{pipeline.name}: backfill {args.id} rolled back in {production.output}: version {done['version']}")
    return ExitCode.OK
