"""`python -m jobs backfill`: a closed range of landed data reprocessed into a work root of
its own, staged, validated, then published at once, or for a Delta table written over the
range in the production table in one commit (jobs/backfill/); `--rollback` undoes that."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from jobs import declare
from jobs.backfill.options import BACKFILL_OPTIONS
from jobs.backfill.readers import downstream_of
from jobs.backfill.steps import Backfill, Step, StepFailed
from jobs.cli.common import add_pipeline, add_root, fail
from jobs.exit_codes import ExitCode
from jobs.lake.builds import in_use
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
        "--step",
        choices=[str(step) for step in Step],
        help="run only this step (the Airflow DAG runs each as a task); a backfill's steps are "
        "reprocess -> validate -> publish, or for a Delta table's range reprocess -> validate -> replace",
    )
    backfill.add_argument(
        "--rollback",
        action="store_true",
        help="with --id: undo that backfill's replacement of a Delta table's range (within its time travel)",
    )
    backfill.add_argument(
        "--with-downstream",
        action="store_true",
        help="then each pipeline that reads its table (and theirs), the same range from the level above's staged "
        "rows; every level validated before any is published; with --rollback: each undone, the lowest first",
    )
    backfill.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.backfill.request import BackfillError, backfill_request, publish_roots
    from jobs.session import check_java

    if args.rollback:
        return _roll_back(args)
    if args.with_downstream and args.step:
        return fail(ExitCode.USAGE, "--with-downstream runs every step of every level: leave out --step")
    params = {"pipeline": args.pipeline, **{option.name: getattr(args, option.name) for option in BACKFILL_OPTIONS}}
    params = {k: v for k, v in params.items() if v is not None}
    backfill_id = args.id or new_run_id(datetime.now(UTC))
    declared = declare.load_all()
    try:
        request = backfill_request(params, args.root, publish_roots(args.root), backfill_id)
        chain = [Backfill.of(request)]
        for name in downstream_of(request.pipeline, declared) if args.with_downstream else []:
            upstream = next(b.request for b in chain if b.pipeline.name == declared[name].source.table)
            level = {"pipeline": name, "since": request.since, "until": request.until}
            if request.max_files_per_trigger:
                level["max_files_per_trigger"] = request.max_files_per_trigger
            reader = backfill_request(level, args.root, publish_roots(args.root), backfill_id, reads=upstream.stage)
            chain.append(Backfill.of(reader))
    except BackfillError as error:
        return fail(ExitCode.USAGE, str(error))
    for backfill in chain:
        load_suite(backfill.pipeline)  # a broken suite refused before any Spark work
        for warning in backfill.request.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    readers = [p.name for p in declared.values() if p.source.table == request.pipeline]
    if readers and not args.with_downstream and chain[0].production is not None:
        print(
            f"warning: {', '.join(readers)} read(s) {request.pipeline}'s table: this replacement is a rewrite they pass "
            "over and owe until a backfill of theirs redoes the range (--with-downstream does it with this one)",
            file=sys.stderr,
        )
    check_java()
    for backfill in chain:
        request = backfill.request
        print(f"{request.pipeline}: backfill {request.backfill_id} of {request.to_params()}")
        print(f"  work root {request.work_root} (own checkpoint), staging {request.stage}")
        if request.reads is not None:
            print(f"  reads the staged rows of {request.upstream}: {request.reads}")
        try:
            backfill.check()
        except BackfillError as error:
            return fail(ExitCode.REFUSED, str(error))
        if backfill.production is not None:
            table = backfill.production.output
            print(f"  then replaces {request.since} .. {request.until} in the production table {table}")
    if len(chain) == 1:
        return _run_steps(chain[0], [Step(args.step)] if args.step else chain[0].steps)
    # Every level staged and validated before any is published: a level that fails leaves all as they were.
    for backfill in chain:
        code = _run_steps(backfill, backfill.steps[:-1])
        if code != ExitCode.OK:
            return code
    for backfill in chain:
        code = _run_steps(backfill, backfill.steps[-1:], undo=False)
        if code != ExitCode.OK:
            return code
    undo = ("--root", chain[0].request.root, "--id", backfill_id, "--rollback", "--with-downstream")
    print(f"  undo: {jobs_command('backfill', chain[0].request.pipeline, *undo)}")
    return ExitCode.OK


def _run_steps(backfill: Backfill, steps: list[Step] | tuple[Step, ...], undo: bool = True) -> int:
    """Each step in turn, said as it ends; the first that does not succeed ends the backfill.
    `undo`: say how to undo a replacement (a cascade says it once, for every level)."""
    for step in steps:
        try:
            done = backfill.run(step)
        except StepFailed as failed:
            return failed.code if failed.message is None else fail(failed.code, failed.message)
        print(f"  {done.said()}")
        if step == Step.REPLACE and undo:
            request = backfill.request
            undo = ("--root", request.root, "--id", request.backfill_id, "--rollback")
            print(f"  undo: {jobs_command('backfill', request.pipeline, *undo)}")
    return ExitCode.OK


def _roll_back(args: argparse.Namespace) -> int:
    """Undo backfill --id's replacement of the range, in one commit (with --with-downstream:
    each level's, the lowest first)."""
    from jobs import backfill
    from jobs.backfill.replace import roll_back
    from jobs.backfill.request import work_root_of
    from jobs.backfill.versions import REPLACED
    from jobs.lake import fs
    from jobs.lake.layout import join, normalize
    from jobs.lake.locks import AlreadyRunning
    from jobs.run.application import Application

    if not args.id:
        return fail(ExitCode.USAGE, "--rollback needs the --id of the backfill to undo")
    pipelines = declare.load_all()
    top = declare.load(args.pipeline)
    levels = [pipelines[name] for name in downstream_of(top.name, pipelines)] if args.with_downstream else []
    located = [(p, in_use(p.name, args.root, p.source.table)) for p in [top, *levels]]
    name = f"jobs-backfill-rollback-{top.name}"
    spark = Application.for_command(name, [p for p, _ in located], [where for _, where in located]).session()
    for pipeline, production in reversed(located):
        work_root = work_root_of(normalize(args.root), pipeline.name, args.id)
        if pipeline is not top and not fs.exists(join(work_root, REPLACED)):
            print(
                f"{pipeline.name}: backfill {args.id} replaced nothing in production (a copy, or none): nothing to undo"
            )
            continue
        try:
            done = roll_back(spark, pipeline, work_root, args.id, production)
        except (backfill.BackfillError, AlreadyRunning) as error:
            return fail(ExitCode.REFUSED, f"{pipeline.name}: {error}")
        print(f"{pipeline.name}: backfill {args.id} rolled back in {production.output}: version {done.version}")
    return ExitCode.OK
