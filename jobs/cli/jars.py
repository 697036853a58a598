"""`python -m jobs jars`: the runtime jars of the jar lock, fetched once and checked."""

from __future__ import annotations

import argparse

from jobs.cli.common import fail
from jobs.exit_codes import ExitCode


def add_parser(commands) -> None:
    jars = commands.add_parser(
        "jars",
        help="fetch the jars the product adds to Spark (s3a, Delta), once, and check them against the jar lock",
        description=(
            "Fetch every runtime jar the jar lock names (hadoop-aws of Spark's own Hadoop and the AWS SDK v2 "
            "modules it uses, for s3a://; Delta Lake's, for Delta tables) through Spark's own resolution of Maven coordinates, into "
            "JOBS_JARS_DIR (default <cache>/jars), and check each one's sha256 against the lock. Jars already "
            "there and checked are not fetched again: afterwards it works offline. A folder that holds them "
            "(a machine without Maven Central) can be named as JOBS_JARS_DIR; they are checked the same way."
        ),
    )
    jars.add_argument("--check", action="store_true", help="only check: exit 1 if one is missing or not the locked one")
    jars.add_argument(
        "--for", dest="used_for", choices=("s3a", "delta"), help="only the jars for s3a:// or for Delta tables"
    )
    jars.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.jvm import jars

    missing = jars.missing(args.used_for)
    if missing and args.check:
        return fail(ExitCode.FAILED, f"not in {jars.jars_dir()} as locked: {', '.join(j.file for j in missing)}")
    try:
        jars.fetch(missing)
    except jars.JarMismatch as error:
        return fail(ExitCode.FAILED, str(error))
    for jar in jars.locked(args.used_for):
        print(f"{jar.coordinates:60} {jar.size / 2**20:8.1f} MB  {jar.used_for}")
    print(jars.jars_dir())
    return ExitCode.OK
