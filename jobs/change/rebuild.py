"""A rebuild: every landed file read again under the declaration as it is now, into a new
build of the pipeline (its own checkpoint, table, quarantine and run reports), while the
runs of the build in use go on; then, at once, the switch to it; and back (`--rollback`).

    <root>/builds/<pipeline>/<id>/     the new build: a root of its own (jobs/lake/layout.py)
    <root>/builds/<pipeline>/_CURRENT.json   the build runs use, once a switch happened

The rebuild runs the pipeline into its build as often as it is started (an interrupted
rebuild resumes from the build's checkpoint, as any run does). The switch takes the lock
of the build in use, so no run of it is in flight, runs the new build once more (what
landed meanwhile), checks that it has taken every file the build in use took (less those
deleted since, which the plan named) and that it quarantines no far larger share of its rows
than the build in use (a declaration that misreads every event would otherwise replace a good
table with an empty one; `--accept-quarantine` switches anyway), validates its whole table (a
failed `fail` check stops here), and then, in this order:

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

import logging
from dataclasses import replace
from datetime import UTC, datetime

from pyspark.sql import SparkSession

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger
from jobs.change.compare_builds import now_used, quarantine_refusal
from jobs.change.plan import Plan, plan
from jobs.declare import PipelineBase
from jobs.exit_codes import ExitCode
from jobs.lake import builds, delta, fs, listings
from jobs.lake.landing import new_files_path, source_landings
from jobs.lake.layout import Locations, folder_pattern, is_inside, join, literal, normalize, own_root
from jobs.lake.locks import checkpoint_lock
from jobs.lake.pointer import Pointer
from jobs.lake.pointer import write as write_pointer
from jobs.launch import execute, finished_of
from jobs.request import RunMode, RunRequest
from jobs.units import UsageError, duration_words
from jobs.validate.validation import validate_table

ORIGINAL = "original"  # the build a pipeline starts with: <root>/checkpoints/<pipeline> and the rest
log = logging.getLogger("jobs.rebuild")


class RebuildError(UsageError):
    """The rebuild or its rollback cannot go on as asked; what was switched stays as it was."""


class BuildRunFailed(RuntimeError):
    """A run of the build failed (its run report says why); the same build id resumes it."""


def build_locations(root: str, pipeline_name: str, build_id: str, reads: str | None = None) -> Locations:
    """A build's own checkpoint, table, quarantine and runs; the pipeline's landing (a
    reader's: the table of `reads` in use), archive and dimensions."""
    base = normalize(root)
    shared = Locations.resolve(pipeline_name, root=base, landing=builds.in_use(reads, base).output if reads else None)
    own = shared.with_own_root(pipeline_name, own_root(base, "builds", pipeline_name, build_id))
    return replace(own, archive=shared.archive)


def rebuild(
    spark: SparkSession,
    pipeline: PipelineBase,
    root: str,
    build_id: str,
    max_files_per_trigger: int | None = None,
    accept_quarantine: bool = False,
) -> Pointer:
    """Read every landed file into build `build_id` under the declaration, then switch to it
    (the build's runs take at most `max_files_per_trigger` files per batch; `accept_quarantine`:
    even if it quarantines far more of its rows than the build in use)."""
    before = start(spark, pipeline, root, build_id, max_files_per_trigger)
    return switch(spark, pipeline, root, build_id, before, max_files_per_trigger, accept_quarantine)


def start(
    spark: SparkSession, pipeline: PipelineBase, root: str, build_id: str, max_files_per_trigger: int | None = None
) -> Plan:
    """The plan, then a run of the new build over what has landed; the build in use goes on."""
    reads = pipeline.source.table
    in_use = builds.in_use(pipeline.name, root, reads)
    before = plan(spark, pipeline, in_use)
    for line in before.lines():
        log.info("%s", line)
    refuse_the_one_in_use(pipeline.name, root, build_id)
    build = build_locations(root, pipeline.name, build_id, reads)
    request = RunRequest(pipeline.name, build, mode=RunMode.REBUILD, max_files_per_trigger=max_files_per_trigger)
    _read_archive(pipeline, spark, request)  # first: what retention moved out of the landing
    _run(pipeline, spark, request)  # while the build in use goes on
    return before


def switch(
    spark: SparkSession,
    pipeline: PipelineBase,
    root: str,
    build_id: str,
    before: Plan,
    max_files_per_trigger: int | None = None,
    accept_quarantine: bool = False,
) -> Pointer:
    """Under the lock of the build in use: the new build takes what landed since, then runs use it."""
    reads = pipeline.source.table
    in_use = builds.in_use(pipeline.name, root, reads)
    build = build_locations(root, pipeline.name, build_id, reads)
    with checkpoint_lock(in_use.ledger, pipeline.name, "rebuild switch", pipeline.orchestration.timeout_s):
        # No run of the build in use is in flight: first what its retention moved before the
        # build listed the landing (in the order they landed), then what landed meanwhile.
        request = RunRequest(pipeline.name, build, mode=RunMode.REBUILD, max_files_per_trigger=max_files_per_trigger)
        _read_archive(pipeline, spark, request)
        _run(pipeline, spark, request)
        refusal = None if accept_quarantine else quarantine_refusal(pipeline.name, root, build_id, in_use, build)
        if refusal:
            raise RebuildError(refusal)
        return _switch(spark, pipeline, root, build_id, in_use, build, before)


def _run(pipeline: PipelineBase, spark: SparkSession, request: RunRequest) -> None:
    """One run of the build, as `request` (a rebuild's, not validated) asks."""
    # Retention is the build in use's until the switch: a file the build read may not be read
    # by it yet, and must stay where it landed.
    keep = pipeline.model_copy(update={"retention": pipeline.retention.model_copy(update={"landed": "keep"})})
    finished = finished_of(execute(replace(request, validate=False), pipeline=keep, spark=spark))
    if finished.code == ExitCode.REFUSED:
        raise RebuildError(finished.error)
    if finished.report is None:
        raise BuildRunFailed(finished.error or finished.status)
    report = finished.report
    log.info(
        "  build: run %s %s, %d files, %d rows", report.run_id, report.status, report.input_files, report.input_rows
    )


def _read_archive(pipeline: PipelineBase, spark: SparkSession, request: RunRequest) -> None:
    """Runs of the build over the files in retention's archive it has taken under neither
    name: as archived, or as landed (a file the build read before retention moved it)."""
    build = request.locations
    if pipeline.source.table is not None:
        return  # a reader's landing is another pipeline's table: nothing of it is archived
    taken = _taken(build, as_landed=False)
    sources = [
        build.archived_name(landing) for landing in source_landings(build.landing, [s.name for s in pipeline.sources])
    ]
    wanted: dict[int, list[str]] = {}
    for source, archive in enumerate(sources):
        for path in listings.list_files(archive):
            if path not in taken and build.landed_name(path) not in taken:
                wanted.setdefault(source, []).append(path)
    if not wanted:
        return
    if not any(is_inside(path, build.landing) for path in taken):
        # Nothing read from the landing yet, so nothing retention moves meanwhile was read:
        # each archive listed whole (Spark passes over what the build took from it).
        runs = [{source: folder_pattern(sources[source]) for source in wanted}]
    else:  # by name, a run per folder (a pattern of names across folders matches more)
        runs = [
            {source: new_files_path(folder, tuple(files)) or folder}
            for source, paths in wanted.items()
            for folder, files in _by_folder(paths).items()
        ]
    for paths in runs:
        listed = tuple(
            paths.get(source, join(literal(archive), "{_}")) for source, archive in enumerate(sources)
        )  # {_}: none
        log.info("  build: reading %d file(s) in retention's archive: %s", sum(map(len, wanted.values())), listed)
        _run(pipeline, spark, replace(request, from_archive=listed))


def _by_folder(paths: list[str]) -> dict[str, list[str]]:
    folders: dict[str, list[str]] = {}
    for path in sorted(paths):
        folders.setdefault(path.rpartition("/")[0], []).append(path)
    return folders


def _switch(
    spark: SparkSession,
    pipeline: PipelineBase,
    root: str,
    build_id: str,
    in_use: Locations,
    build: Locations,
    before: Plan,
) -> Pointer:
    new = _ready(spark, pipeline, build_id, in_use, build, before)
    in_use_ledger = Ledger(in_use.ledger)
    if not in_use_ledger.retired():  # (started again after this step: as it was)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        in_use_ledger.retire(by_build=build_id, at=now, checkpoint=build.checkpoint)
    now = in_use_ledger.retired()["at"]
    previous = builds.current_build(root, pipeline.name)
    previous_id = previous.id if previous else ORIGINAL
    output, table_version = build.output, None
    if pipeline.output.format == "delta":
        output = in_use.output  # the table readers read: the new rows go there, in one commit
        table_version = _copy_table(spark, build.output, output, {"switch_to": build_id, "switched_at": now})
        Ledger(build.ledger).move_output(output)
    before_it = builds.build_pointer(
        previous_id,
        in_use,
        previous.at if previous else now,
        **({k: v for k, v in previous.about.items() if k != "table_version"} if previous else {}),
        table_version=table_version - 1 if table_version is not None else None,
    )
    pointer = replace(
        builds.build_pointer(
            build_id,
            replace(build, output=output),
            now,
            why=before.changes,
            files=len(new),
            previously_quarantined_now_used=now_used(spark, in_use, build, new),
            table_version=table_version,
        ),
        previous=before_it,
    )
    write_pointer(builds.builds_folder(root, pipeline.name), pointer)
    _keep(Ledger(build.ledger), in_use_ledger, previous_id, in_use, pipeline, now)
    if pipeline.output.format == "delta":
        fs.remove_tree(build.output)  # copied: the build's runs write `output`
    return pointer


def _ready(
    spark: SparkSession, pipeline: PipelineBase, build_id: str, in_use: Locations, build: Locations, before: Plan
) -> set[str]:
    """The files the build took, once it is fit to switch to: it took every file the build in
    use took (but those the plan said are lost), or a reader's, every file its upstream's
    table holds now; and its table passes its suite."""
    new = _taken(build)
    if pipeline.source.table is not None:
        missing = sorted(set(CheckpointLog("", build.landing).committed_output_files() or {}) - new)
    else:
        missing = sorted(_taken(in_use) - new - set(before.lost))
    if missing:
        raise RebuildError(f"build {build_id} has not taken {len(missing)} files the build in use took: {missing[:3]}")
    verdict = validate_table(spark, pipeline, build)
    if verdict.status == "failed":  # as a backfill's staged result: not made current
        raise RebuildError(f"build {build_id}'s table failed its suite's `fail` checks: not switched to it")
    return new


def _keep(ledger: Ledger, replaced: Ledger, name: str, locations: Locations, pipeline: PipelineBase, at: str) -> None:
    """The replaced build, kept for a rollback until the new one's retention removes it
    (jobs/run/retention.py), with those the replaced build was still keeping."""
    shared_table = pipeline.output.format == "delta"  # one table: its versions are time travel's to keep
    kept = {
        "build": name,
        "checkpoint": locations.checkpoint,
        "quarantine": locations.quarantine,
        "output": None if shared_table else locations.output,
        "since": at,
    }
    before = [b for b in replaced.previous_builds() if b["checkpoint"] not in (kept["checkpoint"], ledger.uri)]
    ledger.record_previous_builds([*before, kept])


def refuse_the_one_in_use(pipeline_name: str, root: str, build_id: str) -> None:
    """RebuildError, before any Spark work, when build `build_id` is the one runs use."""
    if build_locations(root, pipeline_name, build_id).checkpoint == builds.in_use(pipeline_name, root).checkpoint:
        raise RebuildError(f"build {build_id} is the one in use already")


def rollback_target(pipeline: PipelineBase, root: str) -> Pointer:
    """The build a rollback goes back to; RebuildError, before any Spark work, when there is none."""
    pointer = builds.current_build(root, pipeline.name)
    if not pointer or not pointer.previous:
        raise RebuildError(f"pipeline {pipeline.name!r} has no switch to roll back under {root}")
    back = pointer.previous
    for kept in Ledger(builds.in_use(pipeline.name, root).ledger).previous_builds():
        if kept["checkpoint"] == builds.built_locations(back)["checkpoint"] and kept.get("removed_at"):
            raise RebuildError(
                f"build {back.id} was removed at {kept['removed_at']}, kept "
                f"{duration_words(pipeline.retention.previous_build_s)} after the switch (retention.previous_build): "
                "there is nothing to roll back to"
            )
    return back


def roll_back(spark: SparkSession, pipeline: PipelineBase, root: str) -> Pointer:
    """Back to the build in use before the last switch: its checkpoint, and its table."""
    back = rollback_target(pipeline, root)
    pointer = builds.current_build(root, pipeline.name)
    in_use = builds.in_use(pipeline.name, root, pipeline.source.table)
    back_to = builds.built_locations(back)
    with checkpoint_lock(in_use.ledger, pipeline.name, "rebuild rollback", pipeline.orchestration.timeout_s):
        if pipeline.source.table is not None:  # a reader's: the files its upstream's table holds
            landed = set(CheckpointLog("", in_use.landing).committed_output_files() or {})
        else:
            landed = set(listings.list_files(in_use.landing))
        previous = replace(in_use, **back_to)
        gone = sorted(_taken(in_use) - _taken(previous) - landed)
        if gone:
            raise RebuildError(
                f"{len(gone)} files build {pointer.id} took are no longer in the landing (retention), so the "
                f"previous build could not take them: {gone[:3]}"
            )
        now = datetime.now(UTC).isoformat(timespec="seconds")
        Ledger(in_use.ledger).retire(by_build=back.id, at=now, checkpoint=back_to["checkpoint"])
        if pipeline.output.format == "delta" and back.about.get("table_version") is not None:
            says = {"rollback_from": pointer.id, "switched_at": pointer.at}
            _copy_table(spark, in_use.output, in_use.output, says, back.about["table_version"])
        Ledger(previous.ledger).unretire()
        Ledger(previous.ledger).record_rollback(from_build=pointer.id, at=now)
        back = replace(back, at=now, about=back.about | {"rolled_back_from": pointer.id})
        write_pointer(builds.builds_folder(root, pipeline.name), back)
        _keep(Ledger(previous.ledger), Ledger(in_use.ledger), pointer.id, in_use, pipeline, now)
    return back


def _taken(locations: Locations, as_landed: bool = True) -> set[str]:
    """The files a build took, named where they landed (or as read: from the archive too)."""
    checkpoint_log = CheckpointLog.of(locations)
    taken = {taken["path"] for taken in taken_files(Ledger(locations.ledger), checkpoint_log)}
    return {locations.landed_name(path) for path in taken} if as_landed else taken


def _copy_table(spark: SparkSession, source: str, target: str, says: dict[str, str], version: int | None = None) -> int:
    """The rows of Delta table `source` (as of `version`) over the whole of `target`, in one
    commit (schema and partitioning as the source has them); that commit's version. Done
    already (a switch started again): that commit's version, nothing written."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    rows = reader.load(source)
    partitions = delta.partition_columns(source)
    writer = rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
    writer = writer.option("partitionOverwriteMode", "static")  # the whole table, whatever the session says
    return delta.commit_once(writer.partitionBy(*partitions), target, says)
