"""`python -m jobs jvm-archive`: the archive of Spark's classes later JVMs start from."""

from __future__ import annotations

import argparse

from jobs.cli.common import fail
from jobs.exit_codes import ExitCode


def add_parser(commands) -> None:
    archive = commands.add_parser(
        "jvm-archive",
        help="make the archive of Spark's and Delta's classes later JVMs start from (once per JDK, Spark and Delta, about 45 s)",
        description=(
            "Run a small pipeline in a JVM that archives the classes it loaded, so that every later Spark "
            "application of this JDK and Spark maps them instead of loading them (class-data sharing): "
            "about 4 s less per start. make demo and make test run it; so does a DAG's run task on a "
            "worker without one. Prints the archive's path."
        ),
    )
    archive.add_argument("--force", action="store_true", help="make it again even if there is one")
    archive.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs import jvm
    from jobs.session import check_java

    check_java()
    path = jvm.make_archive(force=args.force)
    if path is None:
        return fail(ExitCode.FAILED, "no JVM class archive could be made (see the line above); JVMs start without one")
    print(path)
    return ExitCode.OK
