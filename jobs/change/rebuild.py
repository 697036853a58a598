"""A rebuild: every landed file read again under the declaration as it is now, into a new
build of the pipeline (its own checkpoint, table, quarantine and run reports), while the
runs of the build in use go on; then, at once, the switch to it; and back (`--rollback`).

    <root>/builds/<pipeline>/<id>/     the new build: a root of its own (jobs/lake/layout.py)
    <root>/builds/<pipeline>/_CURRENT.json   the build runs use, once a switch happened

The rebuild runs the pipeline into its build as often as it is started (an interrupted
rebuild resumes from the build's checkpoint, as any run does). The switch takes the lock
of the build in use, so no run of it is in flight, runs the new build once more (what
landed meanwhile), checks that it has taken every file the build in use took (less those
deleted since, which the plan named) and validates its whole table (a failed `fail` check
stops here), and then, in this order:

    1. retires the old checkpoint: a run of it is refused from here on (the ledger's retired.json);
    2. for a Delta table, writes the new build's rows over the table in one commit (readers see
       the old rows or the new); a Parquet table's readers resolve _CURRENT.json instead;
    3. points _CURRENT.json at the new build: runs (CLI, DAGs) resolve its locations.

Interrupted between 1 and 3, runs are refused, saying so, until the rebuild is started again
and finishes the switch. Each landed file is read exactly once by each build: the old one
took what landed before the switch, the new one everything; the two file ledgers show it.
The rollback does the same backwards, while every file the new build took that the old one
did not is still in the landing (the old checkpoint then takes it on its next run).
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger
from jobs.change.plan import Plan, plan
from jobs.declare import PipelineBase
from jobs.lake import builds, delta, fs
from jobs.lake.layout import Locations, join, normalize
from jobs.lake.locks import checkpoint_lock
from jobs.run import runner
from jobs.run.context import RunOptions
from jobs.units import UsageError
from jobs.validate.validation import validate_table

ORIGINAL = "original"  # the build a pipeline starts with: <root>/checkpoints/<pipeline> and the rest
log = logging.getLogger("jobs.rebuild")


class RebuildError(UsageError):
    """The rebuild or its rollback cannot go on as asked; what was switched stays as it was."""


def build_locations(root: str, pipeline_name: str, build_id: str) -> Locations:
    """A build's own checkpoint, table, quarantine and runs; the pipeline's landing, archive
    and dimensions."""
    base = normalize(root)
    shared = Locations.resolve(pipeline_name, root=base)
    own = shared.with_own_root(pipeline_name, join(base, "builds", pipeline_name, build_id))
    return replace(own, archive=shared.archive)


def rebuild(
    spark: SparkSession, pipeline: PipelineBase, root: str, build_id: str, options: RunOptions | None = None
) -> dict[str, Any]:
    """Read every landed file into build `build_id` under the declaration, then switch to it.
    `options`: how the build's runs go (e.g. at most N files per batch)."""
    before = start(spark, pipeline, root, build_id, options)
    return switch(spark, pipeline, root, build_id, before, options)


def start(
    spark: SparkSession, pipeline: PipelineBase, root: str, build_id: str, options: RunOptions | None = None
) -> Plan:
    """The plan, then a run of the new build over what has landed; the build in use goes on."""
    in_use = builds.in_use(pipeline.name, root)
    before = plan(spark, pipeline, in_use)
    if before.archived.files:
        raise RebuildError(
            f"{before.archived} are in retention's archive ({in_use.archive}), which a rebuild does not read yet: "
            "move them back into the landing first"
        )
    for line in before.lines():
        log.info("%s", line)
    build = build_locations(root, pipeline.name, build_id)
    if build.checkpoint == in_use.checkpoint:
        raise RebuildError(f"build {build_id} is the one in use already")
    _run(pipeline, build, spark, options)  # while the build in use goes on
    return before


def switch(
    spark: SparkSession,
    pipeline: PipelineBase,
    root: str,
    build_id: str,
    before: Plan,
    options: RunOptions | None = None,
) -> dict[str, Any]:
    """Under the lock of the build in use: the new build takes what landed since, then runs use it."""
    in_use = builds.in_use(pipeline.name, root)
    build = build_locations(root, pipeline.name, build_id)
    with checkpoint_lock(in_use.ledger, pipeline.name):
        _run(pipeline, build, spark, options)  # what landed meanwhile; no run of the build in use is in flight
        return _switch(spark, pipeline, root, build_id, in_use, build, before)


def _run(pipeline: PipelineBase, build: Locations, spark: SparkSession, options: RunOptions | None) -> None:
    # Retention is the build in use's until the switch: a file the build read may not be read
    # by it yet, and must stay where it landed.
    keep = pipeline.model_copy(update={"retention": pipeline.retention.model_copy(update={"landed": "keep"})})
    report = runner.run(keep, build, options or RunOptions(), spark=spark)
    log.info(
        "  build: run %s %s, %d files, %d rows", report.run_id, report.status, report.input_files, report.input_rows
    )


def _switch(
    spark: SparkSession,
    pipeline: PipelineBase,
    root: str,
    build_id: str,
    in_use: Locations,
    build: Locations,
    before: Plan,
) -> dict[str, Any]:
    old = _taken(in_use)
    new = _taken(build)
    missing = sorted(old - new - set(before.lost))
    if missing:
        raise RebuildError(f"build {build_id} has not taken {len(missing)} files the build in use took: {missing[:3]}")
    verdict = validate_table(spark, pipeline, build)
    if verdict.status == "failed":  # as a backfill's staged result: not made current
        raise RebuildError(f"build {build_id}'s table failed its suite's `fail` checks: not switched to it")
    in_use_ledger = Ledger(in_use.ledger)
    if not in_use_ledger.retired():  # (started again after this step: as it was)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        in_use_ledger.retire(by_build=build_id, at=now, checkpoint=build.checkpoint)
    now = in_use_ledger.retired()["at"]
    previous = builds.current_build(root, pipeline.name) or {"build": ORIGINAL}
    output, table_version = build.output, None
    if pipeline.output.format == "delta":
        output = in_use.output  # the table readers read: the new rows go there, in one commit
        table_version = _copy_table(spark, build.output, output, {"switch_to": build_id, "at": now})
        _move_output(Ledger(build.ledger), output)
    pointer = {
        "build": build_id,
        "checkpoint": build.checkpoint,
        "output": output,
        "quarantine": build.quarantine,
        "runs": build.runs,
        "switched_at": now,
        "why": before.changes,
        "files": len(new),
        "previously_quarantined_now_used": _now_used(spark, in_use.quarantine, build.quarantine, new),
        "table_version": table_version,
        "previous": {
            **{k: v for k, v in previous.items() if k != "previous"},
            "build": previous.get("build", ORIGINAL),
            "checkpoint": in_use.checkpoint,
            "output": in_use.output,
            "quarantine": in_use.quarantine,
            "runs": in_use.runs,
            "table_version": table_version - 1 if table_version is not None else None,
        },
    }
    fs.write_json(builds.pointer(root, pipeline.name), pointer)
    return pointer


def roll_back(spark: SparkSession, pipeline: PipelineBase, root: str) -> dict[str, Any]:
    """Back to the build in use before the last switch: its checkpoint, and its table."""
    pointer = builds.current_build(root, pipeline.name)
    if not pointer or not pointer.get("previous"):
        raise RebuildError(f"pipeline {pipeline.name!r} has no switch to roll back under {root}")
    in_use = builds.in_use(pipeline.name, root)
    back = pointer["previous"]
    with checkpoint_lock(in_use.ledger, pipeline.name):
        landed = set(fs.list_files(in_use.landing))
        previous = replace(in_use, **{k: back[k] for k in ("checkpoint", "output", "quarantine", "runs")})
        gone = sorted(_taken(in_use) - _taken(previous) - landed)
        if gone:
            raise RebuildError(
                f"{len(gone)} files build {pointer['build']} took are no longer in the landing (retention), so the "
                f"previous build could not take them: {gone[:3]}"
            )
        now = datetime.now(UTC).isoformat(timespec="seconds")
        Ledger(in_use.ledger).retire(by_build=back["build"], at=now, checkpoint=back["checkpoint"])
        if pipeline.output.format == "delta" and back.get("table_version") is not None:
            says = {"rollback_from": pointer["build"], "switched_at": pointer["switched_at"]}
            _copy_table(spark, in_use.output, in_use.output, says, back["table_version"])
        Ledger(previous.ledger).unretire()
        fs.write_json(builds.pointer(root, pipeline.name), {**back, "rolled_back_from": pointer["build"], "at": now})
    return back


def _taken(locations: Locations) -> set[str]:
    checkpoint_log = CheckpointLog(locations.checkpoint, locations.output)
    return {taken["path"] for taken in taken_files(Ledger(locations.ledger), checkpoint_log)}


def _copy_table(spark: SparkSession, source: str, target: str, says: dict[str, str], version: int | None = None) -> int:
    """The rows of Delta table `source` (as of `version`) over the whole of `target`, in one
    commit (schema and partitioning as the source has them); that commit's version. Done
    already (a switch started again): that commit's version, nothing written."""
    for existing in reversed(delta.versions(target)):
        if delta.user_metadata(target, existing) == says:
            return existing
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    rows = reader.load(source)
    partitions = delta.partition_columns(source)
    writer = rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
    writer = writer.option("partitionOverwriteMode", "static")  # the whole table, whatever the session says
    writer.partitionBy(*partitions).option("userMetadata", json.dumps(says)).save(target)  # as user_metadata reads
    return delta.versions(target)[-1]


def _move_output(ledger: Ledger, output: str) -> None:
    """The build's checkpoint writes `output` from now on: its contract says so."""
    contract = ledger.recorded_contract() or {}
    fs.write_json(join(ledger.uri, "declaration.json"), contract | {"output": output})


def _now_used(spark: SparkSession, old_quarantine: str, new_quarantine: str, taken: set[str]) -> int:
    """Lines the build in use quarantined that the new build used: quarantined by the old
    declaration, of a file the new build read, and not quarantined by the new one."""

    def lines(quarantine: str):
        if not fs.exists(quarantine):
            return None
        found = spark.read.schema("source_file string, line_number long").json(quarantine)
        return found.select("source_file", "line_number").distinct()

    old, new = lines(old_quarantine), lines(new_quarantine)
    if old is None:
        return 0
    used = old if new is None else old.join(new, ["source_file", "line_number"], "left_anti")
    read = spark.createDataFrame([(path,) for path in sorted(taken)], "source_file string")
    return used.join(read, "source_file", "left_semi").count()
