"""`python -m jobs quarantine-file`: a landed file's lines quarantined unread, from the next
run on: the way past a batch that fails on its data every time it is redone."""

from __future__ import annotations

import argparse

from jobs import declare
from jobs.cli.common import add_pipeline, add_root, fail
from jobs.exit_codes import ExitCode
from jobs.lake.builds import in_use
from jobs.lake.layout import Locations
from jobs.units import printable


def add_parser(commands) -> None:
    command = commands.add_parser(
        "quarantine-file",
        help="quarantine every line of a landed file, unread, from the next run on (gets past a stuck batch)",
        description=(
            "Record FILE in PIPELINE's ledger: the run that reads it quarantines each of its lines unread, "
            "with reason file_quarantined and your --reason as the detail, and accounts them exactly. For a "
            "batch that fails on its data every time it is redone (the run's error names the file and this "
            "command): the next run redoes the batch, and gets past it. Spark's checkpoint is not touched. "
            "A file a committed batch already read is refused: quarantining it would change nothing; so is "
            "one neither in the batch in flight nor landed and not yet taken (the error names the files it could mean)."
        ),
    )
    add_pipeline(command)
    command.add_argument("file", metavar="FILE", help="the landed file, as the run's error names it")
    command.add_argument(
        "--reason", required=True, help="why, in a few words (kept with each line's quarantine record)"
    )
    add_root(command)
    command.add_argument("--checkpoint", metavar="URI", help="the checkpoint (default: <root>/checkpoints/<pipeline>)")
    command.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    pipeline = declare.load(args.pipeline)
    where = in_use(pipeline.name, args.root, checkpoint=args.checkpoint)
    return quarantine(pipeline, where, args.file, args.reason) or ExitCode.OK


def quarantine(pipeline: declare.PipelineBase, locations: Locations, file: str, reason: str) -> int | None:
    """Record a file quarantined by hand (also `run --quarantine-file`); an exit code when
    that is refused, None when it is done."""
    from jobs.accounting.quarantine_file import FileAlreadyRead, NotALandedFile, quarantine_file

    try:
        path = quarantine_file(pipeline, locations, file, reason)
    except (FileAlreadyRead, NotALandedFile) as error:
        return fail(ExitCode.REFUSED, str(error))
    print(f"{pipeline.name}: {printable(path)} is quarantined; the next run quarantines each of its lines unread")
    return None
