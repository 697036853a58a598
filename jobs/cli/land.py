"""`python -m jobs land`: files copied into a landing location atomically, as producers must."""

from __future__ import annotations

import argparse

from jobs.exit_codes import ExitCode


def add_parser(commands) -> None:
    land = commands.add_parser(
        "land",
        help="land files atomically into a landing location",
        description="Copy each file under a temporary hidden name, then rename it: the pipeline never reads half a file.",
    )
    land.add_argument("files", nargs="+", metavar="FILE")
    land.add_argument("--to", required=True, metavar="URI", help="the landing location (a folder)")
    land.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.lake.landing import land_files

    for landed in land_files(args.files, args.to):
        print(landed)
    return ExitCode.OK
