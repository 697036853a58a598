"""The command line's parser: each command's module adds its own sub-parser and handler."""

from __future__ import annotations

import argparse

from jobs.cli import (
    backfill,
    files,
    history,
    jars,
    jvm_archive,
    land,
    list_pipelines,
    maintain,
    plan,
    profile,
    quality_report,
    quarantine_file,
    rebuild,
    run,
    validate,
)

# In the order `python -m jobs --help` lists them.
COMMANDS = (
    list_pipelines,
    run,
    backfill,
    validate,
    maintain,
    plan,
    rebuild,
    quality_report,
    history,
    profile,
    files,
    quarantine_file,
    land,
    jars,
    jvm_archive,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jobs",
        description="Trigger-once Structured Streaming pipelines over landed JSON event files.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser
