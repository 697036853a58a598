"""Command line: python -m jobs {list,run,backfill,validate,report,land} ...

Exit codes: 0 success (validation passed, or only warned); 1 the run failed (its report
says why); 2 bad usage or a bad declaration; 3 the run refused to start and changed
nothing (another run holds the checkpoint, an incompatible declaration change, a missing
location), or there is nothing to validate; 4 the output failed a `fail` expectation;
130 stopped.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from datetime import UTC, date, datetime

from jobs import spec as specs
from jobs.storage import DEFAULT_ROOT, Locations
from jobs.suite import load_suite

EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED, EXIT_INVALID, EXIT_STOPPED = 1, 2, 3, 4, 130
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")


def _fail(code: int, message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _describe_source(source: specs.Source) -> str:
    schema = "inferred by the first run" if source.infer_schema else f"{len(source.schema)} fields"
    folder = f" from <landing>/{source.name}/" if source.name else ""
    return f"{source.format}{folder}, {schema}, event time {source.event_time.column}"


def _describe_work(spec: specs.PipelineSpec) -> str:
    """What the pipeline does, in one line."""
    if spec.join:
        return (
            f"{spec.join.how} join with {_describe_source(spec.join.source)} on {spec.join.key}, "
            f"within {spec.join.within_s}s after, its watermark {spec.join.watermark_s}s"
        )
    if spec.process:
        return f"processor {spec.process.processor} per {', '.join(spec.keys)} {spec.process.settings}"
    if spec.window:
        window = f"{spec.window.duration_s}s windows"
        if not spec.window.is_tumbling:
            window += f" sliding every {spec.window.slide_s}s"
        aggregates = ", ".join(f"{a.name}={a.function}({a.column or '*'})" for a in spec.aggregates)
        unique = f", each {'+'.join(spec.deduplicate)} once" if spec.deduplicate else ""
        return f"{aggregates} per {window}, keys [{', '.join(spec.keys)}]{unique}"
    enriched = f", enriched from {spec.enrich.table} on {spec.enrich.key}" if spec.enrich else ""
    return f"each usable event{enriched}"


def cmd_list(args: argparse.Namespace) -> int:
    for name, spec in specs.load_all().items():
        suite = load_suite(spec)  # a table without a valid suite is a broken declaration
        if not args.verbose:
            print(name)
            continue
        print(f"{name}: {spec.description}")
        print(f"  source     {_describe_source(spec.source)}")
        print(f"  computes   {_describe_work(spec)}")
        watermark = f"{spec.watermark_s}s" if spec.watermark_s else "none (no state kept by event time)"
        print(f"  watermark  {watermark}")
        print(f"  output     {spec.output.format}, partitioned by {spec.output.partition_by or 'nothing'}")
        print(f"  schedule   {spec.schedule or 'none'}")
        severities = [e.severity for e in suite.expectations]
        print(
            f"  checks     {len(severities)} expectations ({severities.count('fail')} fail, "
            f"{severities.count('warn')} warn), {len(suite.run_checks)} run report checks"
        )
    return 0


def _locations(args: argparse.Namespace, pipeline: str) -> Locations:
    return Locations.resolve(
        pipeline,
        root=args.root,
        landing=getattr(args, "landing", None),
        output=args.output,
        checkpoint=args.checkpoint,
        quarantine=getattr(args, "quarantine", None),
        reports=args.reports,
    )


def _date(text: str, option: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise specs.SpecError(f"{option} {text!r}: use a date like 2023-07-30") from None


def _verdict(validation) -> int:
    return EXIT_INVALID if validation.status == "failed" else 0


def cmd_run(args: argparse.Namespace) -> int:
    from jobs import runner
    from jobs.session import check_java

    spec = specs.load(args.pipeline)
    suite = None if args.no_validate else load_suite(spec)  # a broken suite stops the run before it starts
    options = runner.RunOptions(
        trigger=runner.Trigger.parse(args.trigger),
        max_files_per_trigger=args.max_files_per_trigger,
        max_bytes_per_trigger=runner.parse_size(args.max_bytes_per_trigger) if args.max_bytes_per_trigger else None,
        report_path=args.report,
        landing_glob=args.landing_glob,
        landing_since=_date(args.landing_since, "--landing-since") if args.landing_since else None,
        run_id=args.run_id,
    )
    locations = _locations(args, spec.name)
    runner.landing_path(locations.landing, options)  # a bad pattern or date is a usage error
    if args.run_id:
        from jobs import storage
        from jobs.report import report_uri

        if not _RUN_ID.match(args.run_id):
            raise specs.SpecError(f"--run-id {args.run_id!r}: letters, digits, '.', '_' and '-' only")
        if storage.exists(report_uri(locations, args.run_id)):
            return _fail(EXIT_REFUSED, f"run {args.run_id} already has a report in {locations.runs}; use a new id")
    check_java()
    try:
        report = runner.run(spec, locations, options)
    except runner.RunRefused as error:
        return _fail(EXIT_REFUSED, str(error))
    except runner.RunStopped:
        return 0 if options.trigger.kind == "processing-time" else EXIT_STOPPED
    except runner.RunFailed as error:
        return _fail(EXIT_FAILED, f"run failed: {error}")
    if suite is None:
        return 0
    from jobs import quality
    from jobs.session import spark_for

    validation = quality.validate_run(
        spark_for(locations, f"jobs-{spec.name}"), spec, locations, report.to_dict(), suite
    )
    return _verdict(validation)


def cmd_backfill(args: argparse.Namespace) -> int:
    from jobs import backfill, runner
    from jobs.report import new_run_id
    from jobs.session import check_java

    params = {"pipeline": args.pipeline, "since": args.since, "until": args.until, "prefixes": args.prefix}
    params.update(publish_to=args.publish_to, max_files_per_trigger=args.max_files_per_trigger)
    try:
        plan = backfill.plan_backfill(
            {k: v for k, v in params.items() if v is not None},
            root=args.root,
            allowed_roots=backfill.publish_roots(args.root),
            backfill_id=args.id or new_run_id(datetime.now(UTC)),
        )
    except backfill.BackfillError as error:
        return _fail(EXIT_USAGE, str(error))
    spec = specs.load(plan.pipeline)
    suite = load_suite(spec)
    options = runner.RunOptions(
        max_files_per_trigger=plan.max_files_per_trigger,
        landing_glob=plan.landing_glob,
        landing_since=date.fromisoformat(plan.since) if plan.since else None,
        landing_until=date.fromisoformat(plan.until) if plan.until else None,
    )
    locations = plan.locations
    print(f"{plan.pipeline}: backfill {plan.backfill_id} of {plan.to_params()}")
    print(f"  work root {plan.work_root} (own checkpoint), staging {plan.stage}")
    check_java()
    try:
        runner.run(spec, locations, options)
    except runner.RunRefused as error:
        return _fail(EXIT_REFUSED, str(error))
    except runner.RunStopped:
        return EXIT_STOPPED
    except runner.RunFailed as error:
        return _fail(EXIT_FAILED, f"backfill failed: {error}")
    from jobs import final_windows, quality
    from jobs.session import spark_for

    spark = spark_for(locations, f"jobs-backfill-{spec.name}")
    summary = final_windows.stage_closed_range(spark, spec, locations, plan.stage)
    print(
        f"  staged {summary['rows']} rows: {summary['emitted_rows']} windows the watermark closed during the run "
        f"+ {summary['held_rows']} last windows from state; windows {summary['first_window']} .. "
        f"{summary['last_window']}"
    )
    if args.stage_only:
        return 0
    staged = Locations.resolve(spec.name, root=plan.work_root, output=plan.stage)
    validation = quality.validate_table(spark, spec, staged, suite)
    if validation.status == "failed":
        return _fail(EXIT_INVALID, f"the staged result failed validation; not published ({plan.stage})")
    pointer = backfill.publish(plan)
    print(f"  published: {plan.publish_to}/{backfill.POINTER} -> {pointer['path']}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from jobs.session import check_java

    spec = specs.load(args.pipeline)
    suite = load_suite(spec)
    locations = _locations(args, spec.name)
    check_java()
    from jobs import quality
    from jobs.report import load_reports
    from jobs.session import spark_for

    try:
        report = None if args.all else quality.latest_report(locations, args.run)
        if args.all and not any(r["batch_ids"] for r in load_reports(locations)):
            # Checked before Spark starts: the data quality DAG asks this of every pipeline.
            raise quality.ValidationError(f"nothing to validate yet: {spec.name} has committed no batch")
        spark = spark_for(locations, f"jobs-validate-{spec.name}")
        if report is None:
            validation = quality.validate_table(spark, spec, locations, suite)
        else:
            validation = quality.validate_run(spark, spec, locations, report, suite)
    except quality.ValidationError as error:
        return _fail(EXIT_REFUSED, str(error))
    print(f"  results: {locations.runs}/{validation.validation_id}{quality.RESULTS_SUFFIX}")
    return _verdict(validation)


def cmd_report(args: argparse.Namespace) -> int:
    from jobs import dq_report

    page = dq_report.build(args.root, args.reports, with_data_docs=not args.summary_only)
    print(page)
    return 0


def cmd_land(args: argparse.Namespace) -> int:
    from jobs.landing import land_files

    for landed in land_files(args.files, args.to):
        print(landed)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jobs",
        description="Trigger-once Structured Streaming pipelines over landed JSON event files.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="the declared pipelines, one name per line")
    listing.add_argument("--verbose", "-v", action="store_true", help="describe each pipeline")
    listing.set_defaults(handler=cmd_list)

    run = commands.add_parser(
        "run",
        help="process the files landed since the last run",
        description=(
            "Process every file landed since the last run of PIPELINE, exactly once, and append "
            "the windows the watermark has closed to the output table. Each location defaults "
            "from --root: <root>/landing|tables|checkpoints|quarantine|runs/<pipeline>."
        ),
    )
    run.add_argument("pipeline", metavar="PIPELINE", help="a declared pipeline (see `list`)")
    _add_table_locations(run)
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
    run.add_argument("--max-files-per-trigger", type=int, metavar="N", help="at most N new files per batch")
    run.add_argument(
        "--max-bytes-per-trigger", metavar="SIZE", help="about SIZE of new files per batch (bytes, or e.g. 64m, 1g)"
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
    run.set_defaults(handler=cmd_run)

    backfill = commands.add_parser(
        "backfill",
        help="reprocess a closed range of landed data into its own location, then publish it",
        description=(
            "Reprocess the landed files of a date range (the landing's dt=YYYY-MM-DD folders) or of "
            "some prefixes into <root>/backfills/<pipeline>/<id>/, with its own checkpoint: the "
            "production checkpoint and table are never touched. Every window of the range is kept, "
            "including the last ones an open-ended stream would still hold. The result is staged as "
            "<publish-to>/versions/<id>/, validated, then published by pointing "
            "<publish-to>/_CURRENT.json at it (one atomic write)."
        ),
    )
    backfill.add_argument("pipeline", metavar="PIPELINE", help="a declared pipeline (see `list`)")
    backfill.add_argument(
        "--root", default=DEFAULT_ROOT, metavar="URI", help="where the production landing is (default: %(default)s)"
    )
    backfill.add_argument("--since", metavar="DATE", help="first landing date (dt= folder) to reprocess")
    backfill.add_argument("--until", metavar="DATE", help="last landing date (dt= folder) to reprocess, included")
    backfill.add_argument(
        "--prefix", action="append", metavar="FOLDER", help="a folder under the landing location (repeatable)"
    )
    backfill.add_argument(
        "--publish-to",
        metavar="URI",
        help="where to publish, inside the root or JOBS_PUBLISH_ROOTS (default: <root>/published/<pipeline>)",
    )
    backfill.add_argument("--max-files-per-trigger", type=int, metavar="N", help="at most N files per batch")
    backfill.add_argument("--id", metavar="ID", help="the backfill's id; the same id resumes an interrupted backfill")
    backfill.add_argument(
        "--stage-only", action="store_true", help="stop after staging (the Airflow DAG validates and publishes)"
    )
    backfill.set_defaults(handler=cmd_backfill)

    validate = commands.add_parser(
        "validate",
        help="check a run's output (or the whole table) with Great Expectations",
        description=(
            "Validate the rows the latest finished run of PIPELINE committed (or run --run, or the whole "
            "table with --all) against expectations/<pipeline>.yaml, and check the run's row accounting. "
            "Results go to <root>/runs/<pipeline>/<id>.quality.json. Exit 4 when a `fail` check fails."
        ),
    )
    validate.add_argument("pipeline", metavar="PIPELINE", help="a declared pipeline (see `list`)")
    _add_table_locations(validate)
    scope = validate.add_mutually_exclusive_group()
    scope.add_argument("--all", action="store_true", help="validate the whole committed table")
    scope.add_argument("--run", metavar="RUN_ID", help="validate this run's output (default: the latest run)")
    validate.set_defaults(handler=cmd_validate)

    report = commands.add_parser(
        "report",
        help="build the data quality report: a summary page and the Data Docs site",
        description="Build <reports>/index.html (runs, rows and verdicts of every pipeline) and the Data Docs site.",
    )
    report.add_argument(
        "--root", default=DEFAULT_ROOT, metavar="URI", help="base of every location (default: %(default)s)"
    )
    report.add_argument("--reports", metavar="URI", help="where the report goes (default: <root>/reports)")
    report.add_argument("--summary-only", action="store_true", help="skip rebuilding the Data Docs site")
    report.set_defaults(handler=cmd_report)

    land = commands.add_parser(
        "land",
        help="land files atomically into a landing location",
        description="Copy each file under a temporary hidden name, then rename it: the pipeline never reads half a file.",
    )
    land.add_argument("files", nargs="+", metavar="FILE")
    land.add_argument("--to", required=True, metavar="URI", help="the landing location (a folder)")
    land.set_defaults(handler=cmd_land)
    return parser


def _add_table_locations(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root", default=DEFAULT_ROOT, metavar="URI", help="base of every location (default: %(default)s)"
    )
    parser.add_argument("--output", metavar="URI", help="the output table (default: <root>/tables/<pipeline>)")
    parser.add_argument(
        "--checkpoint",
        metavar="URI",
        help="Spark's checkpoint: the run's progress (default: <root>/checkpoints/<pipeline>)",
    )
    parser.add_argument("--reports", metavar="URI", help="the data quality report (default: <root>/reports)")


def _stop_on_signal(signum: int, frame: object) -> None:
    """SIGTERM or Ctrl-C: a run in progress stops at its next poll; anything else stops now."""
    runner = sys.modules.get("jobs.runner")
    if runner is None or not runner.request_stop():
        raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGINT, _stop_on_signal)
    try:
        return args.handler(args)
    except specs.SpecError as error:
        return _fail(EXIT_USAGE, str(error))
    except KeyboardInterrupt:
        return EXIT_STOPPED
    except Exception as error:  # noqa: BLE001 - one actionable line, not a traceback
        from jobs.session import JavaMissing

        code = EXIT_REFUSED if isinstance(error, JavaMissing) else EXIT_FAILED
        return _fail(code, str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__)


if __name__ == "__main__":
    sys.exit(main())
