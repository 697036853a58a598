"""`python -m jobs files`: the file ledger (every landed file a run took, with its rows), or
the files the output table holds."""

from __future__ import annotations

import argparse
import json
import sys

from jobs import declare
from jobs.cli.common import add_pipeline, add_root, fail, parse_moment
from jobs.exit_codes import ExitCode
from jobs.lake.builds import in_use
from jobs.units import printable


def add_parser(commands) -> None:
    files = commands.add_parser(
        "files",
        help="the file ledger: every landed file a run took, with its rows; or the table's files",
        description=(
            "List every landed file PIPELINE has taken: its size and modification time, the batch that "
            "read it, the run that accounted it, when the batch committed, and its rows in / used / "
            "quarantined / filtered / late. Answered from the checkpoint and the pipeline's accounts; no data is "
            "read again. With --output, list the files the output table holds instead: exactly the "
            "committed ones, which is what a plain reader of the folder (DuckDB, pyarrow) should read."
        ),
    )
    add_pipeline(files)
    add_root(files)
    files.add_argument("--checkpoint", metavar="URI", help="the checkpoint (default: <root>/checkpoints/<pipeline>)")
    files.add_argument("--table", metavar="URI", help="the output table (default: <root>/tables/<pipeline>)")
    chosen = files.add_mutually_exclusive_group()
    chosen.add_argument("--run", metavar="RUN_ID", help="only the files of the batches this run accounted")
    chosen.add_argument(
        "--since", metavar="TIME", help="only files of batches committed at or after TIME (a date or an ISO time; UTC)"
    )
    chosen.add_argument("--output", action="store_true", help="list the output table's committed files instead")
    files.add_argument("--json", action="store_true", help="one JSON object per file, one per line")
    files.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.accounting import file_ledger
    from jobs.accounting.checkpoint import CheckpointLog
    from jobs.accounting.ledger import Ledger

    pipeline = declare.load(args.pipeline)
    where = in_use(pipeline.name, args.root, pipeline.source.table, output=args.table, checkpoint=args.checkpoint)
    checkpoint_log = CheckpointLog.of(where)
    if args.output:
        listed = file_ledger.table_files(checkpoint_log)
        if listed is None:
            return fail(ExitCode.FAILED, f"part of the sink log in {where.output}/_spark_metadata is missing")
        columns = {"bytes": "size_bytes", "modified": "modified_at", "file": "path"}
    else:
        after = parse_moment(args.since, "--since")
        listed = file_ledger.taken_files(Ledger(where.ledger), checkpoint_log, args.run, after)
        columns = _ledger_columns(pipeline)
        if pipeline.source.table:  # a reader: which of the upstream's batches (versions) committed each file
            upstream = CheckpointLog("", where.landing)
            committed = upstream.committing_batches()
            listed = [{**entry, "upstream_batch": committed.get(entry["path"])} for entry in listed]
            unit = "version" if upstream.is_delta() else "batch"
            columns = {f"{pipeline.source.table} {unit}": "upstream_batch", **columns}
    if args.json:
        sys.stdout.writelines(json.dumps(entry) + "\n" for entry in listed)
        return ExitCode.OK
    rule_columns = [key for key in columns.values() if key.startswith("rule:")]
    for entry in listed:
        broken = entry.get("violations")
        entry.update({key: None if broken is None else broken.get(key[5:], 0) for key in rule_columns})
    _print_table(columns, listed)
    return ExitCode.OK


def _ledger_columns(pipeline: declare.PipelineBase) -> dict[str, str]:
    """Title -> key of each column the file ledger shows."""
    return {
        "batch": "batch_id",
        "run": "run_id",
        "committed": "committed_at",
        "rows": "input_rows",
        "used": "used_rows",
        "quarantined": "quarantined_rows",
        **({"filtered": "filtered_rows"} if pipeline.filters else {}),
        "late": "late_rows_dropped",
        **({"rescued": "rescued_rows"} if pipeline.source.rescues else {}),
        **{rule.name: f"rule:{rule.name}" for rule in pipeline.rules},  # the file's rows breaking it
        "bytes": "size_bytes",
        "modified": "modified_at",
        "file": "path",
    }


def _print_table(columns: dict[str, str], rows: list[dict]) -> None:
    """Aligned columns, '?' for what is not known; the last column (a path) unpadded. Control
    characters a producer put in a name are shown escaped, never sent to the terminal."""
    cells = [[("?" if row[key] is None else printable(str(row[key]))) for key in columns.values()] for row in rows]
    widths = [max([len(title), *(len(line[i]) for line in cells)]) for i, title in enumerate(columns)]
    for line in [list(columns), *cells]:
        print("  ".join(cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=False)) + "  " + line[-1])
    print(f"{len(rows)} file(s)")
