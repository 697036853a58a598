"""What a declaration, as it is now, means against the checkpoint and table its pipeline
already has (`python -m jobs plan P`): the run resumes as is, or the checkpoint cannot
resume and every file the pipeline ever read must be read again, each change named.

A plan reads only what runs recorded and what the storage lists: the checkpoint
contract (jobs/accounting/ledger.py), the table's own schema (the Parquet footer's Spark
schema, or the Delta log's), the landing, the archive and the file ledger. The schema
after the change comes from Spark's analysis of the flow on no rows (no Spark job runs).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.accounting.checkpoint import CheckpointLog, table_schema
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger, contract_changes, outlived_changes, with_recorded_schema
from jobs.declare import PipelineBase
from jobs.flow.patterns import pattern_of
from jobs.lake import listings
from jobs.lake.layout import Locations, is_inside
from jobs.run.owed import owed_now

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# What a run of the declaration does with the checkpoint it finds.
NEW = "new"  # no checkpoint yet: the first run starts one
RESUMES = "resumes"  # the checkpoint describes the declaration's query: runs go on as they are
REPROCESS = "reprocess"  # it does not: every file read so far must be read again under the declaration


@dataclass
class Files:
    """How many files, and their bytes."""

    files: int = 0
    bytes: int = 0

    def add(self, size: int) -> None:
        self.files += 1
        self.bytes += size

    def __str__(self) -> str:
        return f"{self.files:,} file{'' if self.files == 1 else 's'}, {_size(self.bytes)}"


@dataclass
class Plan:
    pipeline: str
    verdict: str
    changes: list[str]
    table_format: str
    batches: int  # committed by the checkpoint
    schema_before: dict[str, str] | None  # column -> Spark type, as the table holds them; None: no table yet
    schema_after: dict[str, str]  # as the declaration writes them
    landed: Files  # in the landing now (read so far or not)
    archived: Files  # moved to the archive by retention
    lost: list[str] = field(default_factory=list)  # taken, then deleted by retention: no reprocessing reads them
    outlived: list[str] = field(default_factory=list)  # changes the run resumes across (a `where`)
    owed: list[str] = field(default_factory=list)  # a reader's: its upstream's rewrites not redone (jobs/run/owed.py)

    @property
    def reads(self) -> Files:
        """What reprocessing every file would read: the landed and the archived ones."""
        return Files(self.landed.files + self.archived.files, self.landed.bytes + self.archived.bytes)

    def schema_changes(self) -> list[str]:
        before, after = self.schema_before or {}, self.schema_after
        if self.schema_before is None:
            return []
        found = [f"+ {name} {kind}" for name, kind in after.items() if name not in before]
        found += [f"- {name} {kind}" for name, kind in before.items() if name not in after]
        found += [
            f"~ {name} {before[name]} -> {kind}"
            for name, kind in after.items()
            if name in before and before[name] != kind
        ]
        return found

    def lines(self) -> list[str]:
        said = {
            NEW: "new: no checkpoint yet; the first run starts one and reads every landed file",
            RESUMES: f"resumes: the checkpoint ({self.batches:,} batches) describes this declaration's query",
            REPROCESS: (
                f"reprocess: the checkpoint ({self.batches:,} batches) cannot resume this declaration's query; "
                f"every file read so far must be read again under it (python -m jobs rebuild {self.pipeline})"
            ),
        }
        out = [f"{self.pipeline}: {said[self.verdict]}"]
        if self.changes:
            out.append("  changes the checkpoint cannot outlive:")
            out += [f"    {change}" for change in self.changes]
        if self.outlived:
            out.append("  changes the checkpoint outlives (the rows read before keep what they were given):")
            out += [f"    {change}" for change in self.outlived]
        if self.owed:
            out.append("  owes what its upstream rewrote (a backfill redoes a range once the runs have closed it):")
            out += [f"    {line}" for line in self.owed]
        out.append(f"  table ({self.table_format}):")
        if self.schema_before is None:
            out.append("    no table yet; its columns will be: " + _columns(self.schema_after))
        elif self.schema_changes():
            out.append("    columns now: " + _columns(self.schema_before))
            out.append("    columns after: " + _columns(self.schema_after))
            out += [f"      {change}" for change in self.schema_changes()]
        else:
            out.append("    columns unchanged: " + _columns(self.schema_after))
        out.append(f"  reprocessing would read {self.reads}: landed {self.landed}, archived {self.archived}")
        if self.lost:
            out.append(
                f"  lost to reprocessing: {len(self.lost):,} of the files read so far are in neither the landing "
                f"nor the archive (retention deleted them, or someone did; first: {self.lost[0]}): "
                "a table made again would miss their rows"
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"reads": asdict(self.reads), "schema_changes": self.schema_changes()}


def _columns(schema: dict[str, str]) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in schema.items())


def _size(count: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:,} {unit}" if unit == "bytes" else f"{count:,.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def plan(spark: SparkSession, pipeline: PipelineBase, locations: Locations) -> Plan:
    """The plan of `pipeline` as declared now, against what its locations hold."""
    from jobs.flow.query import output_schema
    from jobs.run.preflight import checkpoint_contract, table_source

    checkpoint_log = CheckpointLog.of(locations)
    ledger = Ledger(locations.ledger)
    recorded = ledger.recorded_contract()
    started = checkpoint_log.has_started()
    # What check_contract refuses a run for, as changes.
    if checkpoint_log.output_has_other_log():
        changes = ["the table was written under another checkpoint"]
    elif recorded is None:
        changes = ["the checkpoint was not started by this runner (no _pipeline/declaration.json)"] if started else []
    else:
        changes = contract_changes(recorded, checkpoint_contract(pipeline, locations))
    verdict = REPROCESS if changes else RESUMES if started else NEW
    outlived_before = ledger.recorded_outlived() if started else None  # None: a checkpoint from before it was kept
    outlived = [] if outlived_before is None else outlived_changes(outlived_before, pattern_of(pipeline).outlived())
    declared = with_recorded_schema(pipeline, ledger)
    if pipeline.source.table is not None and ledger.recorded_schema() is None:  # the table's, as its first run takes it
        declared = declared.model_copy(update={"source": table_source(pipeline, locations.landing)[1]})
    after = output_schema(spark, declared)
    schema_before, schema_after = (
        table_schema(checkpoint_log),
        {f.name: f.dataType.simpleString() for f in after.fields},
    )
    if pipeline.transform:  # a transform that makes other columns: a rebuild, as a run says
        from jobs.flow.transform import changed_table

        changes += changed_table(pipeline.transform, schema_before, schema_after)
        verdict = REPROCESS if changes else verdict
    landed, archived, lost = _files(locations, ledger, checkpoint_log)
    delta_reader = pipeline.source.table_format == "delta" and started
    return Plan(
        pipeline=pipeline.name,
        verdict=verdict,
        changes=changes,
        table_format=pipeline.output.format,
        batches=len(checkpoint_log.committed_batches()),
        schema_before=schema_before,
        schema_after=schema_after,
        landed=landed,
        archived=archived,
        lost=lost,
        outlived=outlived,
        owed=owed_now(checkpoint_log, locations.ledger, pipeline.name) if delta_reader else [],
    )


def _files(locations: Locations, ledger: Ledger, checkpoint_log: CheckpointLog) -> tuple[Files, Files, list[str]]:
    """The landing's files and the archive's, and the files read so far that neither holds."""
    landed, archived = Files(), Files()
    on_hand: set[str] = set()
    for path, (size, _) in listings.sizes_and_times(locations.landing).items():
        landed.add(size)
        on_hand.add(path)
    for path, (size, _) in listings.sizes_and_times(locations.archive).items():
        archived.add(size)
        on_hand.add(locations.landed_name(path))
    taken = {locations.landed_name(taken["path"]) for taken in taken_files(ledger, checkpoint_log)}
    lost = [path for path in taken if is_inside(path, locations.landing) and path not in on_hand]
    return landed, archived, sorted(set(lost))
