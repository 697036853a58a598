"""`python -m jobs land`: files copied into a landing location atomically, as producers must."""

from __future__ import annotations

import argparse
from datetime import UTC, date, datetime

from jobs.cli.common import add_root, parse_date
from jobs.exit_codes import ExitCode
from jobs.units import UsageError, printable


def add_parser(commands) -> None:
    land = commands.add_parser(
        "land",
        help="land files atomically into a landing location",
        description=(
            "Copy each file under a temporary hidden name, then rename it: the pipeline never reads half a file. "
            "The location must be one a declared pipeline reads under --root (or a folder inside one), "
            "unless --force is given."
        ),
    )
    land.add_argument("files", nargs="+", metavar="FILE")
    land.add_argument("--to", required=True, metavar="URI", help="the landing location (a folder)")
    add_root(land, help="the root whose pipelines' landings --to is checked against")
    land.add_argument(
        "--force", action="store_true", help="land even where no declared pipeline reads (e.g. a run's --landing)"
    )
    land.add_argument(
        "--dated",
        nargs="?",
        const="today",
        metavar="DATE",
        help="land into the dt=YYYY-MM-DD folder of DATE (default: today, UTC) under --to, which date-range "
        "backfills and --landing-since read",
    )
    land.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.lake.landing import land_files
    from jobs.lake.layout import join

    if not args.force:
        check_read(args.to, args.root)
    to = join(args.to, f"dt={_day(args.dated).isoformat()}") if args.dated else args.to
    for landed in land_files(args.files, to):
        print(printable(landed))
    return ExitCode.OK


def _day(text: str) -> date | None:
    """The day of --dated: today (UTC) unless one is given."""
    return datetime.now(UTC).date() if text == "today" else parse_date(text, "--dated")


def check_read(to: str, root: str) -> None:
    """Refuse a location no declared pipeline reads under `root`: files landed there would
    wait for a run that never comes. A folder inside a landing is read too."""
    from jobs import declare
    from jobs.declare.problems import did_you_mean
    from jobs.lake.landing import source_landings
    from jobs.lake.layout import Locations, is_inside, join, normalize

    declared = declare.load_each()
    landings = [
        landing
        for name, pipeline in declared.pipelines.items()
        if pipeline.source.table is None  # one that reads a table has no landing
        for landing in source_landings(Locations.resolve(name, root=root).landing, [s.name for s in pipeline.sources])
    ]
    # A declaration that does not load still names its landing, by its file's name.
    landings += [Locations.resolve(name, root=root).landing for name in declared.broken]
    target = normalize(to)
    if any(is_inside(target, landing) for landing in landings):
        return
    base = join(normalize(root), "landing")
    read = sorted(landing.removeprefix(f"{base}/") for landing in landings)
    close = did_you_mean(target.removeprefix(f"{base}/"), read) if is_inside(target, base) else ""
    raise UsageError(
        f"no declared pipeline reads {target}{close}; the declared pipelines read, under {base}: "
        f"{', '.join(read) or 'nothing'}. "
        "Land into one of those (or a folder inside one), give the --root they are under, "
        "or --force to land there anyway (events for a pipeline not declared yet, to propose one from them: "
        "python -m jobs profile)"
    )
