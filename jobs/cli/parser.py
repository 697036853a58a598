"""The commands, their options and help (argparse)."""

from __future__ import annotations

import argparse

from jobs.cli import commands as handlers
from jobs.cli import running
from jobs.lake.layout import DEFAULT_ROOT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jobs",
        description="Trigger-once Structured Streaming pipelines over landed JSON event files.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="the declared pipelines, one name per line")
    listing.add_argument("--verbose", "-v", action="store_true", help="describe each pipeline")
    listing.set_defaults(handler=handlers.cmd_list)

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
    run.set_defaults(handler=running.cmd_run)

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
    backfill.set_defaults(handler=handlers.cmd_backfill)

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
    validate.set_defaults(handler=handlers.cmd_validate)

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
    report.set_defaults(handler=handlers.cmd_report)

    files = commands.add_parser(
        "files",
        help="the file ledger: every landed file a run took, with its rows; or the table's files",
        description=(
            "List every landed file PIPELINE has taken: its size and modification time, the batch that "
            "read it, the run that accounted it, when the batch committed, and its rows in / used / "
            "quarantined / late. Answered from the checkpoint and the pipeline's accounts; no data is "
            "read again. With --output, list the files the output table holds instead: exactly the "
            "committed ones, which is what a plain reader of the folder (DuckDB, pyarrow) should read."
        ),
    )
    files.add_argument("pipeline", metavar="PIPELINE", help="a declared pipeline (see `list`)")
    files.add_argument(
        "--root", default=DEFAULT_ROOT, metavar="URI", help="base of every location (default: %(default)s)"
    )
    files.add_argument("--checkpoint", metavar="URI", help="the checkpoint (default: <root>/checkpoints/<pipeline>)")
    files.add_argument("--table", metavar="URI", help="the output table (default: <root>/tables/<pipeline>)")
    chosen = files.add_mutually_exclusive_group()
    chosen.add_argument("--run", metavar="RUN_ID", help="only the files of the batches this run accounted")
    chosen.add_argument(
        "--since", metavar="TIME", help="only files of batches committed at or after TIME (a date or an ISO time; UTC)"
    )
    chosen.add_argument("--output", action="store_true", help="list the output table's committed files instead")
    files.add_argument("--json", action="store_true", help="one JSON object per file, one per line")
    files.set_defaults(handler=handlers.cmd_files)

    quarantine = commands.add_parser(
        "quarantine-file",
        help="quarantine every line of a landed file, unread, from the next run on (gets past a stuck batch)",
        description=(
            "Record FILE in PIPELINE's ledger: the run that reads it quarantines each of its lines unread, "
            "with reason file_quarantined and your --reason as the detail, and accounts them exactly. For a "
            "batch that fails on its data every time it is redone (the run's error names the file and this "
            "command): the next run redoes the batch, and gets past it. Spark's checkpoint is not touched. "
            "A file a committed batch already read is refused: quarantining it would change nothing."
        ),
    )
    quarantine.add_argument("pipeline", metavar="PIPELINE", help="a declared pipeline (see `list`)")
    quarantine.add_argument("file", metavar="FILE", help="the landed file, as the run's error names it")
    quarantine.add_argument(
        "--reason", required=True, help="why, in a few words (kept with each line's quarantine record)"
    )
    quarantine.add_argument(
        "--root", default=DEFAULT_ROOT, metavar="URI", help="base of every location (default: %(default)s)"
    )
    quarantine.add_argument(
        "--checkpoint", metavar="URI", help="the checkpoint (default: <root>/checkpoints/<pipeline>)"
    )
    quarantine.set_defaults(handler=handlers.cmd_quarantine_file)

    land = commands.add_parser(
        "land",
        help="land files atomically into a landing location",
        description="Copy each file under a temporary hidden name, then rename it: the pipeline never reads half a file.",
    )
    land.add_argument("files", nargs="+", metavar="FILE")
    land.add_argument("--to", required=True, metavar="URI", help="the landing location (a folder)")
    land.set_defaults(handler=handlers.cmd_land)
    archive = commands.add_parser(
        "jvm-archive",
        help="make the archive of Spark's classes later JVMs start from (once per JDK and Spark, about 30 s)",
        description=(
            "Run a small pipeline in a JVM that archives the classes it loaded, so that every later Spark "
            "application of this JDK and Spark maps them instead of loading them (class-data sharing): "
            "about 4 s less per start. make demo and make test run it; so does a DAG's run task on a "
            "worker without one. Prints the archive's path."
        ),
    )
    archive.add_argument("--force", action="store_true", help="make it again even if there is one")
    archive.set_defaults(handler=handlers.cmd_jvm_archive)
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
