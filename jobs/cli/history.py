"""`python -m jobs history`: the runs of every pipeline (or one), from their event logs,
without Spark; or any SQL over the views `runs` and `batches` (docs/history.md)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime

from jobs import declare
from jobs.cli.common import add_root, fail, parse_moment
from jobs.exit_codes import ExitCode
from jobs.units import duration, printable

# What the runs are listed with when no --sql is given: the newest last.
_RECENT = """
SELECT pipeline, run_id, status, started_at, duration_s, input_rows, used_rows, quarantined_rows,
       filtered_rows, late_rows, output_rows, coalesce(len(anomalies), 0) AS anomalies
FROM runs WHERE record = 'run' ORDER BY started_at DESC, run_id DESC LIMIT {limit}
"""


def add_parser(commands) -> None:
    history = commands.add_parser(
        "history",
        help="the run history: every run's account and every validation's verdict, asked with SQL",
        description=(
            "List the newest runs of every pipeline under the root (or of PIPELINE) from their event logs "
            "(two Delta tables per pipeline, `runs` and `batches`, that every run and validation appends to), "
            "without Spark. With --sql, answer any DuckDB SQL over the views `runs` and `batches` "
            "(docs/history.md lists their columns)."
        ),
    )
    history.add_argument("pipeline", nargs="?", help="only this pipeline's history")
    add_root(history)
    history.add_argument(
        "--since", metavar="TIME", help="only runs and batches at or after TIME (a date or an ISO time; UTC)"
    )
    history.add_argument("--sql", metavar="QUERY", help="a query over the views runs and batches")
    history.add_argument(
        "--late",
        action="store_true",
        help="list the tables past their freshness: no run appended rows for longer than they may go",
    )
    history.add_argument("--limit", type=int, default=20, metavar="N", help="how many runs to list (default 20)")
    history.add_argument("--json", action="store_true", help="one JSON object per row, one per line")
    history.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import duckdb

    from jobs.history import query

    if args.late:
        return _late(args)
    since = parse_moment(args.since, "--since")
    if not query.run_folders(args.root, args.pipeline):
        if args.pipeline:
            declare.load(args.pipeline)  # a name neither logged nor declared is a mistake, said as `run` says it
        whose = f"of {args.pipeline} " if args.pipeline else ""
        print(
            f"no run {whose}is in an event log under {args.root} yet (runs before the history existed: their run reports)",
            file=sys.stderr,
        )
    asked = args.sql or _RECENT.format(limit=max(args.limit, 0))
    connection = query.connect(args.root, args.pipeline, since, asked)
    try:
        result = connection.execute(asked)
    except duckdb.Error as error:
        return fail(ExitCode.USAGE, f"--sql: {error}")
    columns = [d[0] for d in result.description]
    found = result.fetchall()
    if args.sql is None:
        found.reverse()  # the newest last, as a log reads
    if args.json:
        sys.stdout.writelines(json.dumps(dict(zip(columns, row, strict=True)), default=str) + "\n" for row in found)
        return ExitCode.OK
    _print_table(columns, found)
    print(f"{len(found)} row(s)")
    return ExitCode.OK


def _late(args: argparse.Namespace) -> int:
    """The declared tables past their freshness, from the event logs (docs/history.md)."""
    from jobs.history import freshness

    if args.sql or args.since:
        return fail(ExitCode.USAGE, "--late lists the late tables now: it takes no --sql or --since")
    declared = declare.load_each()
    pipelines = [declare.load(args.pipeline)] if args.pipeline else list(declared.pipelines.values())
    broken = {} if args.pipeline else declared.broken  # not checked: said, and the exit says so
    for name, why in broken.items():
        print(f"error: {name} not checked, its declaration does not load: {printable(why)}", file=sys.stderr)
    checked = freshness.of_logs(args.root, pipelines, datetime.now(UTC))
    late = [f for f in checked if f.late]
    if args.json:
        sys.stdout.writelines(json.dumps(f.as_dict()) + "\n" for f in late)
    else:
        rows = [(f.pipeline, f.last_append or "never", duration(f.age_s) + " ago", f.limit_said) for f in late]
        _print_table(["pipeline", "last_append", "since", "freshness"], rows)
        held = sum(f.limit_s is not None for f in checked)
        unchecked = f"; {len(broken)} declaration(s) not checked" if broken else ""
        never = [f.pipeline for f in checked if f.limit_s is not None and f.age_s is None]
        if never:  # not late, and not fresh either: a wrong --root says so here, not as an all-clear
            print(
                f"never run under {args.root}: {', '.join(never)} (no run in an event log there yet)", file=sys.stderr
            )
        print(f"{len(late)} late table(s) of {held} with a freshness{unchecked}")
    return ExitCode.USAGE if broken else ExitCode.OK


def _print_table(columns: list[str], found: list) -> None:
    cells = [["" if value is None else printable(str(value)) for value in row] for row in found]
    widths = [max([len(title), *(len(line[i]) for line in cells)]) for i, title in enumerate(columns)]
    for line in [columns, *cells]:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
