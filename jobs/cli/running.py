"""`python -m jobs run`: one pipeline, or several in one Spark application (jobs/group.py)."""

from __future__ import annotations

import argparse

from jobs import declare
from jobs.cli.commands import _date, _link, _locations, _quarantine, fail
from jobs.exit_codes import ExitCode
from jobs.units import UsageError, check_id, parse_size
from jobs.validate.suite import load_suite


def cmd_run(args: argparse.Namespace) -> int:
    from jobs.flow.sink import Trigger
    from jobs.run import runner

    names = _chosen_pipelines(args)
    options = runner.RunOptions(
        trigger=Trigger.parse(args.trigger),
        max_files_per_trigger=args.max_files_per_trigger,
        max_bytes_per_trigger=parse_size(args.max_bytes_per_trigger) if args.max_bytes_per_trigger else None,
        report_path=args.report,
        landing_glob=args.landing_glob,
        landing_since=_date(args.landing_since, "--landing-since"),
        run_id=check_id(args.run_id, "--run-id") if args.run_id else None,
        link=_link(args.link),
    )
    if len(names) == 1 and not (args.all or args.schedule):
        return _run_one(args, declare.load(names[0]), options)
    return _run_group(args, names, options)


def _chosen_pipelines(args: argparse.Namespace) -> list[str]:
    """The pipelines a run command names: listed, --all or --schedule; each once."""
    if args.all or args.schedule:
        if args.pipelines:
            raise UsageError("name pipelines, or give --all or --schedule, not both")
        declared = declare.load_all()
        names = [n for n, p in declared.items() if args.all or p.schedule == args.schedule]
        if not names:
            schedules = sorted({p.schedule for p in declared.values() if p.schedule})
            raise UsageError(f"no pipeline is declared with schedule {args.schedule!r} (declared: {schedules})")
        return names
    if not args.pipelines:
        raise UsageError("name a pipeline (see `python -m jobs list`), or give --all or --schedule")
    return list(dict.fromkeys(args.pipelines))


def _run_one(args: argparse.Namespace, pipeline: declare.PipelineBase, options) -> int:
    from jobs.group import Member, run_and_validate
    from jobs.lake import fs
    from jobs.run.report import report_uri
    from jobs.session import check_java

    suite = None if args.no_validate else load_suite(pipeline)  # a broken suite stops the run before it starts
    locations = _locations(args, pipeline.name)
    options.listed(locations.landing)  # a bad pattern or date is a usage error
    if args.run_id and fs.exists(report_uri(locations.runs, args.run_id)):
        return fail(ExitCode.REFUSED, f"run {args.run_id} already has a report in {locations.runs}; use a new id")
    if bool(args.quarantine_file) != bool(args.quarantine_reason):
        raise UsageError("--quarantine-file and --quarantine-reason go together")
    if args.quarantine_file:
        refused = _quarantine(pipeline, locations, args.quarantine_file, args.quarantine_reason)
        if refused:
            return refused
    check_java()
    outcome = run_and_validate(Member(pipeline, locations, suite), options)
    if outcome.error and outcome.code not in (ExitCode.OK, ExitCode.STOPPED):
        return fail(outcome.code, outcome.error)
    return outcome.code


# What names one pipeline's own files: refused when a run names several.
_ONE_PIPELINE_OPTIONS = ("landing", "output", "checkpoint", "quarantine", "report", "quarantine_file")


def _run_group(args: argparse.Namespace, names: list[str], options) -> int:
    from jobs.cli import name_pipelines_in_logs
    from jobs.group import Member, run_group, worst
    from jobs.lake import fs
    from jobs.run.report import report_uri
    from jobs.session import check_java

    given = [f"--{o.replace('_', '-')}" for o in _ONE_PIPELINE_OPTIONS if getattr(args, o, None)]
    if given:
        raise UsageError(f"{', '.join(given)} name one pipeline's files: run that pipeline alone to use them")
    if args.at_once is not None and args.at_once < 1:
        raise UsageError("--at-once must be 1 or more")
    pipelines = [declare.load(name) for name in names]
    members = [Member(p, _locations(args, p.name), None if args.no_validate else load_suite(p)) for p in pipelines]
    for member in members:
        options.listed(member.locations.landing)
        if args.run_id and fs.exists(report_uri(member.locations.runs, args.run_id)):
            return fail(ExitCode.REFUSED, f"run {args.run_id} already has a report for {member.pipeline.name}")
    check_java()
    name_pipelines_in_logs()
    print(f"running {len(members)} pipelines in one Spark application: {', '.join(names)}", flush=True)
    outcomes = run_group(members, options, at_once=args.at_once)
    code = worst([o.code for o in outcomes])
    print(f"\n{len(outcomes)} pipelines, exit {int(code)}:")
    for outcome in outcomes:
        print(f"  {outcome.line()}")
    return code
