"""Backfills of a pipeline that reads another's table (docs/graph.md, "Changes follow the graph").

A reader's range is read from its upstream's rows of the range's dates, never from a landing:

    in a cascade (`backfill <upstream> --with-downstream`): the upstream backfill's staged result
    alone (`backfill <reader>`): the upstream table's rows of those dates as it is now, copied
        once into <work root>/input (input.json: the upstream's Delta version read)

Either is a plain Parquet folder, complete once _SUCCESS is in it, which the reader's
reprocess reads as it reads a Parquet table (its files listed: nothing writes it any more).
Once the reader's range is published or replaced, its production ledger records what it
redid (jobs/run/owed.py): what a rewrite of its upstream it passed over is then no longer owed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from jobs import declare
from jobs.backfill.request import BackfillRequest
from jobs.lake import delta, fs
from jobs.lake.builds import in_use
from jobs.lake.layout import join
from jobs.run import owed

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INPUT_SAID = "input.json"


def downstream_of(name: str, pipelines: dict[str, declare.PipelineBase]) -> list[str]:
    """The pipelines that read `name`'s table, and those that read theirs, each after the one it reads."""
    order: list[str] = []
    level = [name]
    while level:
        level = sorted(p.name for p in pipelines.values() if p.source.table in level)
        order += level
    return order


def take_input(spark: SparkSession, pipeline: declare.PipelineBase, request: BackfillRequest) -> None:
    """A reader's range alone: its upstream table's rows of the range's dates, as the table is
    now, copied into the request's landing (once: a step run again finds them)."""
    from jobs.backfill.replace import range_predicate

    if request.reads is not None or fs.exists(join(request.landing, "_SUCCESS")):
        return
    upstream = declare.load(str(pipeline.source.table))
    table = in_use(upstream.name, request.root).output
    version = None
    if upstream.output.format == "delta":
        version = delta.versions(table)[-1]
        rows = spark.read.format("delta").option("versionAsOf", version).load(table)
    else:
        rows = spark.read.parquet(table)  # through its sink log: committed files only
    fs.write_json(join(request.work_root, INPUT_SAID), {"upstream": upstream.name, "version": version})
    writer = rows.filter(range_predicate(upstream, str(request.since), str(request.until))).write.mode("overwrite")
    writer = writer.option("partitionOverwriteMode", "static")  # the whole folder, _SUCCESS last
    if upstream.output.partition_by:
        writer = writer.partitionBy(upstream.output.partition_by)
    writer.parquet(request.landing)


def record_redone(pipeline: declare.PipelineBase, request: BackfillRequest) -> None:
    """In the reader's production ledger: its range redone, through which upstream version
    (alone) or following which upstream backfill (in a cascade)."""
    production = in_use(pipeline.name, request.root, pipeline.source.table)
    redone = {
        "backfill": request.backfill_id,
        "range": {"since": request.since, "until": request.until},
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if request.reads is not None:
        redone["cascade"] = request.backfill_id  # the upstream's backfill has the same id
    else:
        redone["through_version"] = (fs.read_json_if_there(join(request.work_root, INPUT_SAID)) or {}).get("version")
    owed.record_redone(production.ledger, redone)
