"""`python -m jobs report`: the data quality report, a summary page and the Data Docs site."""

from __future__ import annotations

import argparse

from jobs.cli.common import add_quality_report, add_root
from jobs.exit_codes import ExitCode


def add_parser(commands) -> None:
    report = commands.add_parser(
        "report",
        help="build the data quality report: a summary page and the Data Docs site",
        description="Build <reports>/index.html (runs, rows and verdicts of every pipeline) and the Data Docs site.",
    )
    add_root(report)
    add_quality_report(report)
    report.add_argument("--summary-only", action="store_true", help="skip rebuilding the Data Docs site")
    report.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.quality_report import page

    print(page.build(args.root, args.reports, with_data_docs=not args.summary_only))
    return ExitCode.OK
