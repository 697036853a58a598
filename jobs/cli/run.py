"""`python -m jobs run`: one pipeline, or several in one Spark application (jobs/launch/)."""

from __future__ import annotations

import argparse
import json

from jobs import declare
from jobs.cli.common import add_table_locations, fail, locations_of
from jobs.exit_codes import ExitCode
from jobs.request import RunRequest, add_arguments, from_args
from jobs.units import UsageError
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
    add_arguments(run)  # the run's own options, as the run request defines them (jobs/request.py)
    run.add_argument(
        "--request",
        metavar="JSON",
        help="a whole run request, or a list of them, as JSON (how the Airflow operators start a run)",
    )
    run.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.request:
        return _run_requests(args.request)
    names = _chosen_pipelines(args)
    if len(names) == 1 and not (args.all or args.schedule):
        return _run([_request(args, names[0])])
    return _run_group(args, names)


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


def _request(args: argparse.Namespace, name: str) -> RunRequest:
    pipeline = declare.load(name)
    request = from_args(args, name, locations_of(args, pipeline))
    request.listed()  # a bad pattern or date is a usage error
    if request.validate:
        load_suite(pipeline)  # a broken suite stops the run before it starts
    return request


# What names one pipeline's own files: refused when a run names several.
_ONE_PIPELINE_OPTIONS = {
    "landing": "--landing",
    "output": "--output",
    "checkpoint": "--checkpoint",
    "quarantine": "--quarantine",
    "report_path": "--run-report",
    "quarantine_file": "--quarantine-file",
}


def _run_group(args: argparse.Namespace, names: list[str]) -> int:
    given = [flag for dest, flag in _ONE_PIPELINE_OPTIONS.items() if getattr(args, dest, None)]
    if given:
        raise UsageError(f"{', '.join(given)} name one pipeline's files: run that pipeline alone to use them")
    if args.at_once is not None and args.at_once < 1:
        raise UsageError("--at-once must be 1 or more")
    return _run([_request(args, name) for name in names], at_once=args.at_once)


def _run_requests(text: str) -> int:
    """`--request JSON`: one request, or a group's list of them."""
    try:
        found = json.loads(text)
        requests = [RunRequest.from_json(json.dumps(r)) for r in (found if isinstance(found, list) else [found])]
    except (ValueError, TypeError, KeyError) as error:
        raise UsageError(f"--request: not a run request ({error})") from None
    return _run(requests)


def _run(requests: list[RunRequest], at_once: int | None = None) -> int:
    """Run the requests (several: in one Spark application); the exit code, the worst of theirs."""
    from jobs.cli.logs import name_pipelines_in_logs
    from jobs.lake import fs
    from jobs.launch import execute, execute_group
    from jobs.run.events import Finished, ReportStored
    from jobs.run.messages import brief
    from jobs.run.report import report_uri
    from jobs.session import check_java

    for request in requests:
        if request.run_id and fs.exists(report_uri(request.locations.runs, request.run_id)):
            return fail(
                ExitCode.REFUSED, f"run {request.run_id} already has a report for {request.pipeline}; use a new id"
            )
    check_java()
    # The log above has each message whole; the last line is short, with the commands that help.
    stored: dict[str, str] = {}
    if len(requests) == 1:
        for event in execute(requests[0]):
            if isinstance(event, ReportStored):
                stored[event.pipeline] = event.uri
            finished = event  # the last: Finished
        if finished.error and finished.code not in (ExitCode.OK, ExitCode.STOPPED):
            return fail(finished.code, brief(finished.error, stored.get(finished.pipeline)))
        return finished.code
    name_pipelines_in_logs()
    names = ", ".join(r.pipeline for r in requests)
    print(f"running {len(requests)} pipelines in one Spark application: {names}", flush=True)
    ended = []
    for event in execute_group(requests, at_once=at_once):
        if isinstance(event, ReportStored):
            stored[event.pipeline] = event.uri
        elif isinstance(event, Finished):
            ended.append(event)
    code = ExitCode.worst([f.code for f in ended])
    print(f"\n{len(ended)} pipelines, exit {int(code)}:")
    for finished in ended:
        print(f"  {finished.line(stored.get(finished.pipeline))}")
    return code
