"""The commands: each reads its arguments, calls the stage that does the work, and turns
the outcome into an exit code (jobs/exit_codes.py). Spark is imported only by the
commands that start it."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, date, datetime

from jobs import declare
from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations
from jobs.units import UsageError, duration_words, new_run_id
from jobs.validate.suite import load_suite


def fail(code: ExitCode, message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _date(text: str | None, option: str) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        raise UsageError(f"{option} {text!r}: use a date like 2023-07-30") from None


def _moment(text: str | None, option: str) -> datetime | None:
    """A date or a time (ISO 8601), in UTC unless it says otherwise."""
    try:
        moment = datetime.fromisoformat(text) if text else None
    except ValueError:
        raise UsageError(f"{option} {text!r}: use a date or a time like 2023-07-30 or 2023-07-30T14:05Z") from None
    return moment.replace(tzinfo=UTC) if moment and moment.tzinfo is None else moment


def _link(text: str | None) -> str | None:
    """A web address only: the report links it, so nothing a browser would run."""
    if text and not text.startswith(("http://", "https://")):
        raise UsageError(f"--link {text!r}: give an http(s) URL")
    return text


def _locations(args: argparse.Namespace, pipeline_name: str) -> Locations:
    return Locations.resolve(
        pipeline_name,
        root=args.root,
        landing=getattr(args, "landing", None),
        output=args.output,
        checkpoint=args.checkpoint,
        quarantine=getattr(args, "quarantine", None),
        reports=args.reports,
    )


def _verdict(result) -> int:
    return ExitCode.INVALID if result.status == "failed" else ExitCode.OK


def cmd_list(args: argparse.Namespace) -> int:
    from jobs.flow.patterns import pattern_of

    for name, pipeline in declare.load_all().items():
        suite = load_suite(pipeline)  # a table without a valid suite is a broken declaration
        if not args.verbose:
            print(name)
            continue
        source = pipeline.source
        fields = "inferred by the first run" if source.infer_schema else f"{len(source.fields)} fields"
        severities = [e.severity for e in suite.expectations]
        run_checks = [c for c in (suite.run_checks.rows_balance, suite.run_checks.quarantine_share) if c]
        print(f"{name}: {pipeline.description}")
        print(f"  pattern    {pipeline.pattern}")
        print(f"  source     {source.format}, {fields}, event time {source.event_time.column}")
        print(f"  computes   {pattern_of(pipeline).describe()}")
        print(
            f"  watermark  {f'{pipeline.watermark_s}s' if pipeline.watermark_s else 'none (no state kept by event time)'}"
        )
        for number, rule in enumerate(pipeline.rules):
            print(f"  {'rules' if number == 0 else '':10} {rule.name} ({rule.on_violation}): {rule.check}")
        print(f"  output     {pipeline.output.format}, partitioned by {pipeline.output.partition_by or 'nothing'}")
        print(f"  schedule   {pipeline.schedule or 'none'}")
        kept = pipeline.retention
        landed = (
            "kept"
            if kept.landed == "keep"
            else f"{kept.landed}d {duration_words(kept.landed_after_s)} after accounting"
        )
        output = duration_words(kept.output_after_s) if kept.output_after_s else "kept"
        print(f"  retention  landed files {landed}; output files {output}")
        print(
            f"  checks     {len(severities)} expectations ({severities.count('fail')} fail, "
            f"{severities.count('warn')} warn), {len(run_checks)} run report checks"
        )
    return ExitCode.OK


def cmd_backfill(args: argparse.Namespace) -> int:
    from jobs import backfill
    from jobs.backfill.stage import reprocess, stage_closed_range
    from jobs.run import runner
    from jobs.session import check_java, spark_for
    from jobs.validate.validation import validate_table

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
        return fail(ExitCode.USAGE, str(error))
    pipeline = declare.load(plan.pipeline)
    suite = load_suite(pipeline)
    for warning in plan.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{plan.pipeline}: backfill {plan.backfill_id} of {plan.to_params()}")
    print(f"  work root {plan.work_root} (own checkpoint), staging {plan.stage}")
    check_java()
    try:
        reprocess(plan)
    except runner.RunRefused as error:
        return fail(ExitCode.REFUSED, str(error))
    except runner.RunStopped:
        return ExitCode.STOPPED
    except runner.RunStoppedOnData as error:
        return fail(ExitCode.DATA, f"backfill failed: {error}")
    except runner.RunFailed as error:
        return fail(ExitCode.FAILED, f"backfill failed: {error}")
    spark = spark_for(plan.locations, f"jobs-backfill-{pipeline.name}")
    summary = stage_closed_range(spark, pipeline, plan.locations, plan.stage)
    print(
        f"  staged {summary['rows']} rows: {summary['emitted_rows']} windows the watermark closed during the run "
        f"+ {summary['held_rows']} last windows from state; windows {summary['first_window']} .. "
        f"{summary['last_window']}"
    )
    if args.stage_only:
        return ExitCode.OK
    staged = Locations.resolve(pipeline.name, root=plan.work_root, output=plan.stage)
    if validate_table(spark, pipeline, staged, suite).status == "failed":
        return fail(ExitCode.INVALID, f"the staged result failed validation; not published ({plan.stage})")
    pointer = backfill.publish(plan)
    print(f"  published: {plan.publish_to}/{backfill.POINTER} -> {pointer['path']}")
    return ExitCode.OK


def cmd_validate(args: argparse.Namespace) -> int:
    from jobs.run.report import has_committed_batches, load_reports
    from jobs.session import check_java

    pipeline = declare.load(args.pipeline)
    suite = load_suite(pipeline)
    locations = _locations(args, pipeline.name)
    check_java()
    from jobs.session import spark_for
    from jobs.validate.gx import ValidationError
    from jobs.validate.result import result_uri
    from jobs.validate.validation import latest_report, validate_run, validate_table

    try:
        report = None if args.all else latest_report(locations.runs, args.run)
        if args.all and not has_committed_batches(load_reports(locations.runs)):
            # Checked before Spark starts: the data quality DAG asks this of every pipeline.
            raise ValidationError(f"nothing to validate yet: {pipeline.name} has committed no batch")
        spark = spark_for(locations, f"jobs-validate-{pipeline.name}")
        if report is None:
            result = validate_table(spark, pipeline, locations, suite)
        else:
            result = validate_run(spark, pipeline, locations, report, suite)
    except ValidationError as error:
        return fail(ExitCode.REFUSED, str(error))
    print(f"  results: {result_uri(locations.runs, result.validation_id)}")
    return _verdict(result)


def cmd_report(args: argparse.Namespace) -> int:
    from jobs.publish import report

    print(report.build(args.root, args.reports, with_data_docs=not args.summary_only))
    return ExitCode.OK


def cmd_files(args: argparse.Namespace) -> int:
    from jobs.run import files
    from jobs.run.checkpoint import CheckpointLog
    from jobs.run.ledger import Ledger

    pipeline = declare.load(args.pipeline)
    where = Locations.resolve(pipeline.name, root=args.root, output=args.table, checkpoint=args.checkpoint)
    checkpoint_log = CheckpointLog(where.checkpoint, where.output)
    if args.output:
        listed = files.table_files(checkpoint_log)
        if listed is None:
            return fail(ExitCode.FAILED, f"part of the sink log in {where.output}/_spark_metadata is missing")
        columns = {"bytes": "size_bytes", "modified": "modified_at", "file": "path"}
    else:
        after = _moment(args.since, "--since")
        listed = files.taken_files(Ledger(where.ledger), checkpoint_log, args.run, after)
        columns = {
            "batch": "batch_id",
            "run": "run_id",
            "committed": "committed_at",
            "rows": "input_rows",
            "used": "used_rows",
            "quarantined": "quarantined_rows",
            "late": "late_rows_dropped",
            **({"rescued": "rescued_rows"} if pipeline.source.rescues else {}),
            **{rule.name: f"rule:{rule.name}" for rule in pipeline.rules},  # the file's rows breaking it
            "bytes": "size_bytes",
            "modified": "modified_at",
            "file": "path",
        }
    if args.json:
        sys.stdout.writelines(json.dumps(entry) + "\n" for entry in listed)
        return ExitCode.OK
    rule_columns = [key for key in columns.values() if key.startswith("rule:")]
    for entry in listed:
        broken = entry.get("violations")
        entry.update({key: None if broken is None else broken.get(key[5:], 0) for key in rule_columns})
    _print_table(columns, listed)
    return ExitCode.OK


def _print_table(columns: dict[str, str], rows: list[dict]) -> None:
    """Aligned columns, '?' for what is not known; the last column (a path) unpadded."""
    cells = [[("?" if row[key] is None else str(row[key])) for key in columns.values()] for row in rows]
    widths = [max([len(title), *(len(line[i]) for line in cells)]) for i, title in enumerate(columns)]
    for line in [list(columns), *cells]:
        print("  ".join(cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=False)) + "  " + line[-1])
    print(f"{len(rows)} file(s)")


def cmd_quarantine_file(args: argparse.Namespace) -> int:
    pipeline = declare.load(args.pipeline)
    where = Locations.resolve(pipeline.name, root=args.root, checkpoint=args.checkpoint)
    return _quarantine(pipeline, where, args.file, args.reason) or ExitCode.OK


def _quarantine(pipeline, locations: Locations, file: str, reason: str) -> int | None:
    """Record a file quarantined by hand; an exit code when that is refused."""
    from jobs.run.quarantine_file import FileAlreadyRead, quarantine_file

    try:
        path = quarantine_file(pipeline, locations, file, reason)
    except FileAlreadyRead as error:
        return fail(ExitCode.REFUSED, str(error))
    print(f"{pipeline.name}: {path} is quarantined; the next run quarantines each of its lines unread")
    return None


def cmd_land(args: argparse.Namespace) -> int:
    from jobs.lake.landing import land_files

    for landed in land_files(args.files, args.to):
        print(landed)
    return ExitCode.OK


def cmd_jvm_archive(args: argparse.Namespace) -> int:
    from jobs import jvm
    from jobs.session import check_java

    check_java()
    path = jvm.make_archive(force=args.force)
    if path is None:
        return fail(ExitCode.FAILED, "no JVM class archive could be made (see the line above); JVMs start without one")
    print(path)
    return ExitCode.OK
