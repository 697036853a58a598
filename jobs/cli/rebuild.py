"""`python -m jobs rebuild`: every landed file read again under the declaration as it is
now, into a new build, then the switch to it at once; `--rollback` goes back."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from jobs import declare
from jobs.cli.common import add_pipeline, add_root, fail
from jobs.exit_codes import ExitCode
from jobs.units import new_run_id


def add_parser(commands) -> None:
    rebuild = commands.add_parser(
        "rebuild",
        help="read every landed file again under the declaration into a new build, then switch to it",
        description=(
            "For a changed declaration (see `plan`): run the pipeline over every landed file into a new build "
            "(<root>/builds/<pipeline>/<id>/: its own checkpoint, table, quarantine and run reports) while the "
            "runs of the build in use go on; then, under that build's lock, take what landed meanwhile and switch: "
            "runs use the new build from then on, and readers of a Delta table see its rows in one commit (a "
            "Parquet table's readers resolve <root>/builds/<pipeline>/_CURRENT.json). The same --id resumes an "
            "interrupted rebuild. --rollback returns to the build in use before the last switch."
        ),
    )
    add_pipeline(rebuild)
    add_root(rebuild)
    rebuild.add_argument("--id", metavar="ID", help="the build's id (default: the time); the same id resumes it")
    rebuild.add_argument("--rollback", action="store_true", help="back to the build in use before the last switch")
    rebuild.add_argument(
        "--max-files-per-trigger", type=int, metavar="N", help="at most N files per batch of the build"
    )
    rebuild.add_argument(
        "--with-downstream",
        action="store_true",
        help="then each pipeline that reads its table (and theirs), in graph order, with the same id; with "
        "--rollback: each rolled back, the lowest first",
    )
    rebuild.add_argument(
        "--accept-quarantine",
        action="store_true",
        help="switch even if the new build quarantines far more of its rows than the build in use (refused by default)",
    )
    rebuild.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.backfill.readers import downstream_of

    top = declare.load(args.pipeline)
    pipelines = [top]
    if args.with_downstream:
        declared = declare.load_all()
        pipelines += [declared[name] for name in downstream_of(top.name, declared)]
    if not args.rollback:
        from jobs.validate.suite import load_suite

        for pipeline in pipelines:
            load_suite(pipeline)  # each build is validated before its switch: a broken suite refused first
    build_id = args.id or new_run_id(datetime.now(UTC))
    steps = [(pipeline, args.rollback) for pipeline in (reversed(pipelines) if args.rollback else pipelines)]
    if args.rollback and len(pipelines) > 1:  # a rollback: the lowest first
        appended = _appended_since_switch(top, args.root)
        if appended:  # the readers' previous builds would read those rows twice: rebuilt instead
            print(
                f"{top.name}: its build appended rows after its switch (versions {appended}), which the rollback "
                "removes and its previous build appends again: its readers are rebuilt after it, not rolled back"
            )
            steps = [(top, True), *((reader, False) for reader in pipelines[1:])]
            build_id = new_run_id(datetime.now(UTC))  # the readers' new builds
    for pipeline, rollback in steps:
        code = _rebuild(args, pipeline, build_id, rollback)
        if code != ExitCode.OK:
            return code
    return ExitCode.OK


def _appended_since_switch(pipeline: declare.PipelineBase, root: str) -> list[int]:
    """The versions of a Delta table its build in use appended rows in after its switch: what
    a rollback removes and the previous build appends again (a reader's previous build would
    read them twice, so a cascade rebuilds the readers instead)."""
    from jobs.lake import builds, delta_source

    pointer = builds.current_build(root, pipeline.name)
    switched = pointer.about.get("table_version") if pointer and pipeline.output.format == "delta" else None
    if switched is None:
        return []
    return delta_source.appended_after(builds.in_use(pipeline.name, root).output, switched)


def _rebuild(args: argparse.Namespace, pipeline: declare.PipelineBase, build_id: str, rollback: bool) -> int:
    """One pipeline's rebuild (or rollback), said as it goes."""
    from jobs.change.rebuild import (
        BuildRunFailed,
        RebuildError,
        rebuild,
        refuse_the_one_in_use,
        roll_back,
        rollback_target,
    )
    from jobs.lake.builds import in_use
    from jobs.run.application import Application

    try:  # what would be refused is refused before Spark starts
        if rollback:
            rollback_target(pipeline, args.root)
        else:
            refuse_the_one_in_use(pipeline.name, args.root, build_id)
        where = in_use(pipeline.name, args.root, pipeline.source.table)
        spark = Application.for_command(f"jobs-rebuild-{pipeline.name}", [pipeline], [where]).session()
        if rollback:
            back = roll_back(spark, pipeline, args.root)
            print(f"{pipeline.name}: back to build {back.id} (checkpoint {back.about['checkpoint']})")
            print(_declaration_after_rollback(pipeline, in_use(pipeline.name, args.root).ledger))
            return ExitCode.OK
        print(f"{pipeline.name}: rebuild {build_id}")
        switched = rebuild(
            spark, pipeline, args.root, build_id, args.max_files_per_trigger, accept_quarantine=args.accept_quarantine
        )
    except RebuildError as error:
        return fail(ExitCode.REFUSED, str(error))
    except BuildRunFailed as error:
        return fail(ExitCode.FAILED, f"{pipeline.name}: rebuild failed (the same --id resumes it): {error}")
    print(f"{pipeline.name}: switched to build {switched.id} at {switched.at}")
    print(json.dumps({k: v for k, v in switched.to_dict().items() if k != "previous"}, indent=2))
    return ExitCode.OK


def _declaration_after_rollback(pipeline: declare.PipelineBase, ledger_uri: str) -> str:
    """What to do with the declaration now that runs resume an older build's checkpoint."""
    from jobs.accounting.ledger import Ledger
    from jobs.lake import fs

    ledger = Ledger(ledger_uri)
    kept = ledger.declaration_yaml
    if not fs.exists(kept):
        return (
            f"the declaration goes back too: runs now resume a checkpoint made with {pipeline.name}'s declaration as it "
            f"was then (its contract: {ledger.uri}/declaration.json); `python -m jobs plan {pipeline.name}` shows what "
            "differs, and a run of the declaration as it is now is refused"
        )
    now = pipeline.as_written
    same = now is not None and now == fs.read_text(kept)
    if same:
        return "the declaration is the one that build was made with: runs go on from its checkpoint"
    return (
        f"the declaration goes back too: that build was made with the declaration kept as {kept}; put it back "
        f"in place of {pipeline.name}.yaml before the next run (a run of the declaration as it is now is refused; "
        f"`python -m jobs plan {pipeline.name}` shows what differs)"
    )
