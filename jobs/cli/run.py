"""`python -m jobs run`: one pipeline, or several in one Spark application (jobs/launch/)."""

from __future__ import annotations

import argparse

from jobs import declare
from jobs.cli.common import add_table_locations, check_link, fail, locations_of, parse_date
from jobs.cli.quarantine_file import quarantine
from jobs.exit_codes import ExitCode
from jobs.units import UsageError, check_id, parse_size
from jobs.validate.suite import load_suite


def add_parser(commands) -> None:
    run = commands.add_parser(
        "run",
        help="process the files landed since the last run",
        description=(
            "Process every file landed since the last run of PIPELINE, exactly once, and append "
            "the windows the watermark has closed to the output table. Each location defaults "
            "from --root: <root>/landing|tables|checkpoints|quarantine|runs/<pipeline>. "
            "Several pipelines (or --all, or --schedule) run at once in one Spark application, "
            "each with its own lock, checkpoint, run report and validation; the exit code is the "
            "worst of theirs."
        ),
    )
    run.add_argument("pipelines", nargs="*", metavar="PIPELINE", help="declared pipelines (see `list`)")
    chosen = run.add_mutually_exclusive_group()
    chosen.add_argument("--all", action="store_true", help="every declared pipeline")
    chosen.add_argument(
        "--schedule", metavar="SCHEDULE", help="the pipelines declared with this schedule (e.g. @hourly)"
    )
    run.add_argument(
        "--at-once",
        type=int,
        metavar="N",
        help="with several pipelines, run at most N at a time (default: all); each batch's default cap is "
        "the driver's memory / 16 / N",
    )
    add_table_locations(run)
    run.add_argument("--landing", metavar="URI", help="where producers land files (default: <root>/landing/<pipeline>)")
    run.add_argument(
        "--quarantine",
        metavar="URI",
        help="unusable records, with file, line and reason (default: <root>/quarantine/<pipeline>)",
    )
    run.add_argument(
        "--trigger",
        default="available-now",
        metavar="TRIGGER",
        help=(
            "available-now (default): everything landed so far, in as many batches as the rate limits "
            "allow, then stop; once: everything in a single batch (rate limits ignored), then stop; "
            "processing-time=<duration> (e.g. processing-time=30s): keep running, one "
            "batch per interval, until stopped with Ctrl-C or SIGTERM"
        ),
    )
    run.add_argument(
        "--quarantine-file",
        metavar="FILE",
        help="first quarantine this landed file's lines, unread (see `quarantine-file`; needs --quarantine-reason)",
    )
    run.add_argument("--quarantine-reason", metavar="TEXT", help="why --quarantine-file is quarantined")
    # Admission control (jobs/flow/admission.py): one or the other; by default about a
    # sixteenth of the driver's memory per batch, or what the declaration's spark: block says.
    limit = run.add_mutually_exclusive_group()
    limit.add_argument("--max-files-per-trigger", type=int, metavar="N", help="at most N new files per batch")
    limit.add_argument(
        "--max-bytes-per-trigger",
        metavar="SIZE",
        help="about SIZE of new files per batch (bytes, or e.g. 64m, 1g; default: the driver's memory / 16)",
    )
    run.add_argument(
        "--landing-glob",
        metavar="PATTERN",
        help="list only files matching PATTERN under the landing location (e.g. 'dt=2023-07-*/*')",
    )
    run.add_argument(
        "--landing-since",
        metavar="DATE",
        help="list only dt=YYYY-MM-DD folders from DATE to today (UTC) under the landing location",
    )
    run.add_argument("--report", metavar="PATH", help="also write the run report as JSON to PATH")
    run.add_argument(
        "--no-validate",
        action="store_true",
        help="skip validating the run's output (e.g. when a later step, like the Airflow DAG's, validates it)",
    )
    run.add_argument(
        "--run-id",
        metavar="ID",
        help="name the run (default: start time and a random suffix); the Airflow DAG sets it to find the report",
    )
    run.add_argument(
        "--link",
        metavar="URL",
        help="where the run was started from (the Airflow DAG sets its task's page); kept in the run report",
    )
    run.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.flow.sink import Trigger
    from jobs.run.context import RunOptions

    names = _chosen_pipelines(args)
    options = RunOptions(
        trigger=Trigger.from_text(args.trigger),
        max_files_per_trigger=args.max_files_per_trigger,
        max_bytes_per_trigger=parse_size(args.max_bytes_per_trigger) if args.max_bytes_per_trigger else None,
        report_path=args.report,
        landing_glob=args.landing_glob,
        landing_since=parse_date(args.landing_since, "--landing-since"),
        run_id=check_id(args.run_id, "--run-id") if args.run_id else None,
        link=check_link(args.link),
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
    from jobs.lake import fs
    from jobs.launch import Member, run_and_validate
    from jobs.run.report import report_uri
    from jobs.session import check_java

    suite = None if args.no_validate else load_suite(pipeline)  # a broken suite stops the run before it starts
    locations = locations_of(args, pipeline.name)
    options.listed(locations.landing)  # a bad pattern or date is a usage error
    if args.run_id and fs.exists(report_uri(locations.runs, args.run_id)):
        return fail(ExitCode.REFUSED, f"run {args.run_id} already has a report in {locations.runs}; use a new id")
    if bool(args.quarantine_file) != bool(args.quarantine_reason):
        raise UsageError("--quarantine-file and --quarantine-reason go together")
    if args.quarantine_file:
        refused = quarantine(pipeline, locations, args.quarantine_file, args.quarantine_reason)
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
    from jobs.cli.logs import name_pipelines_in_logs
    from jobs.lake import fs
    from jobs.launch import Member, run_group
    from jobs.run.report import report_uri
    from jobs.session import check_java

    given = [f"--{o.replace('_', '-')}" for o in _ONE_PIPELINE_OPTIONS if getattr(args, o, None)]
    if given:
        raise UsageError(f"{', '.join(given)} name one pipeline's files: run that pipeline alone to use them")
    if args.at_once is not None and args.at_once < 1:
        raise UsageError("--at-once must be 1 or more")
    pipelines = [declare.load(name) for name in names]
    members = [Member(p, locations_of(args, p.name), None if args.no_validate else load_suite(p)) for p in pipelines]
    for member in members:
        options.listed(member.locations.landing)
        if args.run_id and fs.exists(report_uri(member.locations.runs, args.run_id)):
            return fail(ExitCode.REFUSED, f"run {args.run_id} already has a report for {member.pipeline.name}")
    check_java()
    name_pipelines_in_logs()
    print(f"running {len(members)} pipelines in one Spark application: {', '.join(names)}", flush=True)
    outcomes = run_group(members, options, at_once=args.at_once)
    code = ExitCode.worst([o.code for o in outcomes])
    print(f"\n{len(outcomes)} pipelines, exit {int(code)}:")
    for outcome in outcomes:
        print(f"  {outcome.line()}")
    return code
