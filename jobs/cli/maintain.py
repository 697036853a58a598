"""`python -m jobs maintain`: a Delta table's small files compacted and its unneeded files removed."""

from __future__ import annotations

import argparse
import json

from jobs import declare
from jobs.cli.common import add_pipeline, add_table_locations, fail, locations_of
from jobs.exit_codes import ExitCode
from jobs.units import UsageError


def add_parser(commands) -> None:
    maintain = commands.add_parser(
        "maintain",
        help="compact a Delta table's small files (OPTIMIZE) and remove what no version needs (VACUUM)",
        description=(
            "For a pipeline whose table is Delta: OPTIMIZE its closed partitions (dates the watermark has "
            "passed the last window of, which no batch adds rows to any more), between scheduled runs (it waits for one in progress); "
            "then VACUUM the files no version within the declared retention.time_travel (default 7 days) "
            "needs. Prints the table's files and the folder's files and bytes, before and after."
        ),
    )
    add_pipeline(maintain)
    add_table_locations(maintain)
    maintain.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    maintain.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from jobs.lake.builds import in_use
    from jobs.lake.locks import AlreadyRunning
    from jobs.run.application import Application
    from jobs.run.maintain import maintain, refuse_unless_maintainable

    pipeline = declare.load(args.pipeline)
    locations = locations_of(args, pipeline)
    try:
        refuse_unless_maintainable(pipeline, locations)  # before Spark starts
        spark = Application.for_command(f"jobs-maintain-{pipeline.name}", [pipeline], [locations]).session()
        readers = {
            p.name: in_use(p.name, args.root, pipeline.name)
            for p in declare.load_all().values()
            if p.source.table == pipeline.name
        }
        upkeep = maintain(spark, pipeline, locations, readers)
    except (UsageError, AlreadyRunning) as error:
        return fail(ExitCode.REFUSED, str(error))
    print(json.dumps(upkeep.as_dict()) if args.json else "\n".join(upkeep.lines()))
    return ExitCode.OK
