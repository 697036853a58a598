"""A staged backfill written over the same dates of the production Delta table, in one
commit, while the pipeline's runs go on; and that commit undone (`--rollback`).

    staged rows of the range's dates --replaceWhere(<date column> in the range)--> the table
    <work root>/replaced.json   the commit: its version, the one before, the range, the rows

Readers of the table see the version before or the one after: never part of the range
old and part new. The commit is made under the pipeline's lock (jobs/lake/locks.py), as
every write of the table is: started during a run, it waits for the run to end, and a run
started meanwhile waits for it (on S3, Delta's log store assumes one writer at a time).

What the range replaces is every row whose date (the window's, or the event's) is in the
range, with the rows the range's landing folders give: events of those dates landed in
other folders are not in the replacement (docs/backfills.md). Staged rows of other dates
(events landed in the range but of another day) are left out and counted.

Undoing it is not Delta's RESTORE, which takes the whole table back and so would also take
away the batches the runs committed since: their checkpoint counts them as written, so
nothing would write them again. `roll_back` writes the range as the version before held it,
in one commit, within the table's time travel.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.backfill.request import BackfillError, BackfillRequest
from jobs.backfill.versions import REPLACED
from jobs.lake import delta, fs
from jobs.lake.layout import Locations, join, literal
from jobs.lake.locks import checkpoint_lock


@dataclass(frozen=True)
class Commit:
    """A commit of the table: a backfill's replacement, or its rollback."""

    version: int
    version_before: int
    at: str


@dataclass(frozen=True)
class Replaced(Commit):
    """A backfill's replacement of the range (<work root>/replaced.json says the same)."""

    backfill: str
    range: dict[str, str]
    predicate: str
    rows_written: int
    rows_left_out: int  # staged rows of other dates

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Replaced:
        return cls(**{f.name: record[f.name] for f in fields(cls)})

    def said(self) -> str:
        return (
            f"replaced {self.range['since']} .. {self.range['until']}: version {self.version} "
            f"({self.rows_written} rows; {self.rows_left_out} staged rows of other dates left out)"
        )


def range_predicate(pipeline: declare.PipelineBase, since: str, until: str) -> str:
    """The SQL condition of the range's rows: on the partition column when the table has it."""
    column = pipeline.output.partition_by or f"to_date(`{pipeline.partition_meaning}`)"
    if pipeline.output.partition_by:
        column = f"`{column}`"
    return f"{column} >= DATE'{since}' AND {column} <= DATE'{until}'"


def refuse_unless_replaceable(pipeline: declare.PipelineBase, request: BackfillRequest, production: Locations) -> None:
    """Before any Spark work: the table is Delta, the range is dates, and the pipeline's runs
    will write no more rows of those dates (their watermark passed the range's last window)."""
    if pipeline.output.format == "delta" and not delta.is_delta(production.output):
        raise BackfillError(
            f"{production.output} holds no table yet: a backfill replaces a range of the production table once "
            f"a run of {pipeline.name} has made it; run it first, or give publish_to to publish a copy"
        )
    if pipeline.output.format != "delta":
        raise BackfillError(
            f"{production.output} is not a Delta table: a backfill replaces a range of the production table "
            "only for `output: {format: delta}`; give publish_to to publish a copy"
        )
    if not request.since:
        raise BackfillError(
            "a backfill into the production table needs a date range (since, until): prefixes name no dates"
        )
    window = getattr(pipeline, "window", None)
    if window is None:
        return  # events: no state, nothing held back; what runs append later comes from later files
    closes_at = datetime.fromisoformat(request.until).replace(tzinfo=UTC) + timedelta(days=1, seconds=window.duration_s)
    checkpoint_log = CheckpointLog.of(production)
    committed = checkpoint_log.committed_batches()
    watermark_ms = checkpoint_log.next_watermark_ms(committed[-1]) if committed else 0
    if watermark_ms < closes_at.timestamp() * 1000:
        reached = datetime.fromtimestamp(watermark_ms / 1000, UTC).isoformat(timespec="seconds")
        raise BackfillError(
            f"the range is not closed in the production table yet: its runs still write windows up to "
            f"{closes_at.isoformat(timespec='seconds')} (their watermark is at {reached}), which would add to the "
            "replaced rows; backfill it once the watermark has passed, or give publish_to to publish a copy"
        )


def replace_range(
    spark: SparkSession, pipeline: declare.PipelineBase, request: BackfillRequest, production: Locations
) -> Replaced:
    """Write the staged rows of the range's dates over the production table's, in one commit,
    under the pipeline's lock. Run again after that commit (a retried task), it finds the
    commit and writes nothing."""
    with _table_lock(pipeline, production, "backfill replace"):
        return _replace_range(spark, pipeline, request, production)


def _replace_range(
    spark: SparkSession, pipeline: declare.PipelineBase, request: BackfillRequest, production: Locations
) -> Replaced:
    uri = join(request.work_root, REPLACED)
    record = fs.read_json(uri) if fs.exists(uri) else {}
    if record.get("rolled_back"):
        raise BackfillError(
            f"backfill {request.backfill_id} was rolled back; to replace the range again, run a new backfill"
        )
    if "version" in record:
        return Replaced.from_record(record)
    # Where the log was before the commit: a retry looks for the commit it made only after it.
    after = record.get("log_was_at", delta.versions(production.output)[-1])
    fs.write_json(uri, {"log_was_at": after})
    predicate = range_predicate(pipeline, request.since, request.until)
    staged = spark.read.parquet(literal(request.stage))
    inside = staged.filter(predicate)
    rows, written = staged.count(), inside.count()
    # The range said with it: a reader of the table that passes over this version owes it (jobs/run/owed.py).
    says = {"backfill": request.backfill_id, "range": {"since": request.since, "until": request.until}}
    done = Replaced(
        **asdict(_write(spark, inside, production.output, predicate, says, after)),
        backfill=request.backfill_id,
        range={"since": request.since, "until": request.until},
        predicate=predicate,
        rows_written=written,
        rows_left_out=rows - written,
    )
    fs.write_json(uri, done.to_dict())
    return done


def _table_lock(pipeline: declare.PipelineBase, production: Locations, doing: str):
    """The pipeline's lock, waited for as long as a run may last."""
    return checkpoint_lock(production.ledger, pipeline.name, doing, pipeline.orchestration.timeout_s)


def roll_back(
    spark: SparkSession, pipeline: declare.PipelineBase, work_root: str, backfill_id: str, production: Locations
) -> Commit:
    """Write the range as the version before backfill `backfill_id` held it, in one commit."""
    with _table_lock(pipeline, production, "backfill rollback"):
        return _roll_back(spark, work_root, backfill_id, production)


def _roll_back(spark: SparkSession, work_root: str, backfill_id: str, production: Locations) -> Commit:
    uri = join(work_root, REPLACED)
    replaced = fs.read_json(uri) if fs.exists(uri) else {}
    if "version" not in replaced:
        raise BackfillError(f"backfill {backfill_id} replaced nothing in {production.output} (see {uri})")
    if replaced.get("rolled_back"):
        done = replaced["rolled_back"]
        raise BackfillError(f"backfill {backfill_id} was rolled back already, in version {done['version']}")
    says, after = {"rollback_of": backfill_id, "range": replaced["range"]}, replaced["version"]
    later = _later_replacements(production.output, after, replaced["range"])
    if later:
        named = ", ".join(f"backfill {b} (version {v})" for v, b in later)
        raise BackfillError(
            f"the table changed in the range since backfill {backfill_id}: {named} replaced dates of it later; "
            "roll those back first, latest first"
        )
    before = (
        spark.read.format("delta")
        .option("versionAsOf", replaced["version_before"])
        .load(production.output)
        .filter(replaced["predicate"])
    )
    try:
        done = _write(spark, before, production.output, replaced["predicate"], says, after)
    except Exception as error:
        if any(sign in str(error) for sign in ("FileNotFound", "DELTA_FILE_NOT_FOUND", "VersionNotFound")):
            raise BackfillError(
                f"version {replaced['version_before']} of {production.output} is no longer readable: its files were "
                "vacuumed (retention.time_travel); the backfill cannot be rolled back"
            ) from error
        raise
    fs.write_json(uri, replaced | {"rolled_back": asdict(done)})
    return done


def _write(spark: SparkSession, rows, output: str, predicate: str, says: dict[str, str], after: int) -> Commit:
    """`rows` over the table's rows matching `predicate`, in one commit (after version
    `after`, found again if made already); its version, the one before and when."""
    table = spark.read.format("delta").load(output)
    columns = [F.col(f"`{f.name}`").cast(f.dataType).alias(f.name) for f in table.schema.fields]
    writer = rows.select(*columns).write.format("delta").mode("overwrite").option("replaceWhere", predicate)
    return _done(output, delta.commit_once(writer, output, says, after))


def _done(output: str, version: int) -> Commit:
    return Commit(version, version - 1, delta.user_metadata(output, version)["at"])


def _later_replacements(output: str, version: int, span: dict[str, str]) -> list[tuple[int, str]]:
    """The versions after `version` that later backfills wrote over dates of `span` and that
    are still in the table (not rolled back since), with each backfill's id. A version that
    says no range (written before versions said one) counts as overlapping."""
    said = {v: delta.said(output, v) for v in delta.versions(output) if v > version}
    undone = {s["rollback_of"] for s in said.values() if s.get("rollback_of")}
    return [
        (v, s["backfill"])
        for v, s in said.items()
        if s.get("backfill") and s["backfill"] not in undone and _overlaps(s.get("range"), span)
    ]


def _overlaps(other: dict[str, str] | None, span: dict[str, str]) -> bool:
    return other is None or (other["since"] <= span["until"] and span["since"] <= other["until"])
