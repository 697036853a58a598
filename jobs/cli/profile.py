"""`python -m jobs profile LANDING --name NAME`: a first declaration and expectation suite,
proposed from a sample of the events landed there, written into the team's own folders
(JOBS_PIPELINES_DIR, JOBS_EXPECTATIONS_DIR), never over a file (docs/declaring.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from jobs.cli.common import fail
from jobs.exit_codes import ExitCode
from jobs.units import UsageError, parse_name, printable


def add_parser(commands) -> None:
    profile = commands.add_parser(
        "profile",
        help="propose a declaration and a suite from a sample of landed events",
        description=(
            "Read a sample of the files landed under LANDING (a folder or an s3a:// location) and write a proposed "
            "declaration (an events pipeline: its schema with nested types, its event time and format, its required "
            "fields) into JOBS_PIPELINES_DIR and a proposed expectation suite (null shares, value sets, ranges, "
            "uniqueness) into JOBS_EXPECTATIONS_DIR, as NAME.yaml. Never over an existing file; review both "
            "before the first run."
        ),
    )
    profile.add_argument("landing", metavar="LANDING", help="where the events landed (a folder, or s3a://...)")
    profile.add_argument("--name", required=True, help="the pipeline's name (lower-case letters, digits, '_')")
    profile.add_argument(
        "--files", type=int, default=20, metavar="N", help="files read at most, spread over the landing (default 20)"
    )
    profile.add_argument(
        "--lines", type=int, default=20_000, metavar="N", help="lines read at most, in all (default 20000)"
    )
    profile.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.declare.load import from_mapping
    from jobs.declare.profile import read_sample
    from jobs.declare.propose import propose, written
    from jobs.settings import settings
    from jobs.validate.suite import parse_suite

    name = parse_name(args.name, "--name")
    if args.files < 1 or args.lines < 1:
        raise UsageError("--files and --lines take a whole number, 1 or more")
    folders = {"JOBS_PIPELINES_DIR": settings().pipelines_dir, "JOBS_EXPECTATIONS_DIR": settings().expectations_dir}
    if unset := [variable for variable, folder in folders.items() if folder is None]:
        return fail(
            ExitCode.USAGE,
            f"profile writes into your own folders: set {' and '.join(unset)} (unset, they are the package's own, "
            "which profile never writes into)",
        )
    targets = [Path(folder) / f"{name}.yaml" for folder in folders.values()]
    if there := [str(t) for t in targets if t.exists() or t.is_symlink()]:
        return fail(ExitCode.USAGE, f"profile never writes over a file: {', '.join(map(printable, there))} exists")
    print(f"reading a sample of {printable(args.landing)} (up to {args.files} files, {args.lines:,} lines)")
    sample = read_sample(args.landing, args.files, args.lines)
    print(
        f"read {sample.lines:,} line(s) of {len(sample.files)} of {sample.files_listed} file(s): {sample.count:,} events"
    )
    proposal = propose(name, sample)
    pipeline = from_mapping(proposal.declaration, "the proposed declaration")  # both load as written
    parse_suite(proposal.suite, pipeline, "the proposed suite")
    for target, text in zip(targets, written(proposal), strict=True):
        os.makedirs(target.parent, exist_ok=True)
        with open(target, "x", encoding="utf-8") as out:  # "x": never over a file made meanwhile
            out.write(text)
        print(f"wrote {printable(str(target))}")
    path, fmt = proposal.event_time
    print(
        f"event time: {path} ({fmt}); {len(pipeline.source.required)} required field(s); "
        f"{len(proposal.suite['expectations'])} expectation(s)"
    )
    for note in proposal.notes:
        print(f"note: {printable(note)}")
    print(
        f"next: review both (a schedule, a where, a window), then `python -m jobs run {name}`, which reads "
        f"<root>/landing/{name}/"
    )
    return ExitCode.OK
