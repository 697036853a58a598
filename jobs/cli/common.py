"""What the commands share: the one-line error, reading dates and times from the
command line, and the location options with their defaults under a root."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from jobs.exit_codes import ExitCode
from jobs.lake.layout import DEFAULT_ROOT, Locations
from jobs.units import UsageError, printable

if TYPE_CHECKING:
    from jobs.declare import PipelineBase


def fail(code: ExitCode, message: str) -> int:
    """Say what went wrong on stderr (other control characters than a line's end escaped); the exit code to end with."""
    print("error: " + "\n".join(printable(line) for line in message.split("\n")), file=sys.stderr)
    return code


def parse_date(text: str | None, option: str) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        raise UsageError(f"{option} {text!r}: use a date like 2023-07-30") from None


def parse_moment(text: str | None, option: str) -> datetime | None:
    """A date or a time (ISO 8601), in UTC unless it says otherwise."""
    try:
        moment = datetime.fromisoformat(text) if text else None
    except ValueError:
        raise UsageError(f"{option} {text!r}: use a date or a time like 2023-07-30 or 2023-07-30T14:05Z") from None
    return moment.replace(tzinfo=UTC) if moment and moment.tzinfo is None else moment


def locations_of(args: argparse.Namespace, pipeline: PipelineBase) -> Locations:
    """The pipeline's locations: under --root, the build in use's (jobs/lake/builds.py), each
    as an option gives it."""
    from jobs.lake.builds import in_use

    return in_use(
        pipeline.name,
        args.root,
        reads=pipeline.source.table,
        landing=getattr(args, "landing", None),
        output=getattr(args, "output", None),
        checkpoint=getattr(args, "checkpoint", None),
        quarantine=getattr(args, "quarantine", None),
        reports=getattr(args, "reports", None),
    )


def add_root(parser: argparse.ArgumentParser, help: str = "base of every location") -> None:
    # JOBS_ROOT, which the DAGs use, is the command line's default too: one root for both.
    root = os.environ.get("JOBS_ROOT") or DEFAULT_ROOT
    said = f"{help} (default: JOBS_ROOT if set, else {DEFAULT_ROOT}: here %(default)s)"
    parser.add_argument("--root", default=root, metavar="URI", help=said)


def add_table_locations(parser: argparse.ArgumentParser) -> None:
    add_root(parser)
    parser.add_argument("--output", metavar="URI", help="the output table (default: <root>/tables/<pipeline>)")
    parser.add_argument(
        "--checkpoint",
        metavar="URI",
        help="Spark's checkpoint: the run's progress (default: <root>/checkpoints/<pipeline>)",
    )
    add_quality_report(parser)


def add_quality_report(parser: argparse.ArgumentParser) -> None:
    # Named apart from a run's --run-report: the glossary's two reports (docs/glossary.md).
    parser.add_argument(
        "--quality-report",
        "--reports",  # its name before 2026-11-27
        dest="reports",
        metavar="URI",
        help="the data quality report's folder (default: <root>/reports)",
    )


def add_pipeline(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pipeline", metavar="PIPELINE", help="a declared pipeline (see `list`)")
