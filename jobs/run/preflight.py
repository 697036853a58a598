"""The run's preflight: that the declaration still describes the checkpoint's query (before
Spark starts, so that a refused run changes nothing), then, with Spark, the recorded (or
now inferred) schema and the dimension; what the run then works with is its context.
(A `check` is the product's word for what is asked of data: a rule, an expectation.)"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from jobs.accounting.checkpoint import CheckpointLog, table_schema
from jobs.accounting.ledger import (
    IncompatibleCheckpoint,
    Ledger,
    check_contract,
    outlived_changes,
    with_quarantined_files,
    with_recorded_schema,
)
from jobs.columns import reserved
from jobs.declare import PipelineBase
from jobs.declare.parts import Source
from jobs.flow.enrich import check_dimension, read_dimension
from jobs.flow.patterns import pattern_of
from jobs.flow.source import check_inferred, infer_schema, schema_outline
from jobs.flow.tally import Tally
from jobs.lake import fs, s3
from jobs.lake.layout import DEFAULT_ROOT, Locations, StorageError, is_s3, normalize, split_bucket
from jobs.lake.locks import WriterLock
from jobs.request import RunRequest
from jobs.run import readers
from jobs.run.context import RunContext, run_log
from jobs.schema import TypeSpellingError, kind_of, spelled
from jobs.units import jobs_command, printable


def checkpoint_contract(pipeline: PipelineBase, locations: Locations) -> dict[str, Any]:
    """What the checkpoint depends on: the pattern's contract, and where it reads and writes."""
    return {**pattern_of(pipeline).contract(), "landing": locations.landing, "output": locations.output}


def _outlived(pipeline: PipelineBase, ledger: Ledger, started: bool) -> None:
    """Log each change the checkpoint outlives (a `where`), and record the parts as now."""
    now, recorded = pattern_of(pipeline).outlived(), ledger.recorded_outlived()
    if started and recorded is not None:
        for change in outlived_changes(recorded, now):
            run_log(pipeline.name).info(
                "  preflight: resumes under a changed %s (rows read before keep theirs)", change
            )
    if recorded != now:
        ledger.record_outlived(now)


def before_spark(pipeline: PipelineBase, locations: Locations, *, incremental: bool = True) -> None:
    """Before Spark starts, so that a refused run changes nothing: the landing exists, and
    the declaration still describes the checkpoint's query. The landing first: the contract
    names it too, and a landing that is not there is a wrong path, not a changed pipeline.
    An incremental run then says which landing it reads (no other pipeline's, unless shared)."""
    ledger = Ledger(locations.ledger)
    if not fs.listable(locations.landing):
        raise StorageError(_no_landing(pipeline, locations, ledger))
    checkpoint_log = CheckpointLog.of(locations)
    contract = checkpoint_contract(pipeline, locations)
    started = ledger.recorded_contract() is not None
    check_contract(pipeline.name, contract, ledger, checkpoint_log, locations.quarantine)
    if incremental and pipeline.source.table is None:  # a table's reader retires none of its files
        readers.check_and_record(pipeline, locations)
    _outlived(pipeline, ledger, started)
    if started:
        run_log(pipeline.name).info("  preflight: the declaration matches checkpoint %s", locations.checkpoint)
    else:
        run_log(pipeline.name).info("  preflight: a new checkpoint, %s", locations.checkpoint)
        if ledger.validated_through() is None:  # none of its rows validated yet (older ones: unknown)
            ledger.record_validated_through(-1)


def nowhere(pipeline: PipelineBase, locations: Locations) -> str | None:
    """Why a run is in the wrong place (None: it is not), checked before anything is written:
    neither its landing nor its checkpoint is there (a run started from another folder, whose
    ./data holds nothing of it), so it leaves no lock and no run report there."""
    if fs.listable(locations.landing):
        return None
    ledger = Ledger(locations.ledger)
    return None if ledger.recorded_contract() is not None else _no_landing(pipeline, locations, ledger)


def _no_landing(pipeline: PipelineBase, locations: Locations, ledger: Ledger) -> str:
    """Why a run cannot read its landing, and the landing its checkpoint reads if that is another."""
    if pipeline.source.table is not None:
        root = locations.reports.removesuffix("/reports")  # the root's own folder, whatever the build
        run_it = jobs_command(
            "run", pipeline.source.table, *(["--root", root] if root != normalize(DEFAULT_ROOT) else [])
        )
        return f"table {locations.landing}, which this pipeline reads, does not exist yet: run its pipeline first ({run_it})"
    missing = f"landing location {locations.landing} does not exist"
    if is_s3(locations.landing) and not s3.bucket_exists(bucket := split_bucket(locations.landing)[0]):
        return f"{missing}: bucket {bucket} does not exist ({s3.describe_endpoint()}); create it first"
    read = (ledger.recorded_contract() or {}).get("landing")
    if read and read != locations.landing:
        return f"{missing}; checkpoint {locations.checkpoint} reads landing {read}: run with --landing {read}"
    # `land` lands only where a declared pipeline reads under its --root: a landing of another layout needs --force.
    root, _, name = locations.landing.rpartition("/landing/")
    where = ["--root", root] if name == pipeline.name else ["--force"]
    land = jobs_command("land", "FILE...", "--to", locations.landing, *where)
    return f"{missing}; land files there first ({land}) or pass --landing"


def _infer_schema(spark: SparkSession, pipeline: PipelineBase, ledger: Ledger, listed: str) -> None:
    """A first run of a pipeline that infers its schema: inferred once, then recorded."""
    fields = infer_schema(spark, listed)
    source = pipeline.source.with_recorded_fields(fields)
    check_inferred(pipeline.model_copy(update={"source": source}))
    ledger.record_schema(fields, listed)
    log = run_log(pipeline.name)
    log.info("  inferred and recorded the schema (%d fields): %s", len(fields), schema_outline(fields))
    for key, column in source.renamed.items():  # said once: the schema is inferred once
        log.warning("  field %s is read as %s: %s", printable(key), column, reserved(key))


def _schema_of_table(pipeline: PipelineBase, ledger: Ledger, table: str) -> None:
    """A first run of a pipeline reading another's table: the table's schema, recorded as an
    inferred one is (a column the product names itself, such as `event_time`, is read under
    another name: Source.renamed)."""
    fields, source = table_source(pipeline, table)
    ledger.record_schema(fields, table)
    log = run_log(pipeline.name)
    upstream = pipeline.source.table
    log.info("  recorded the schema of table %s (%d columns): %s", upstream, len(fields), schema_outline(fields))
    for key, column in source.renamed.items():
        log.warning("  column %s of table %s is read as %s: %s", printable(key), upstream, column, reserved(key))


def table_source(pipeline: PipelineBase, table: str) -> tuple[dict[str, str], Source]:
    """The schema of the table a pipeline reads, as it is now (what its first run records;
    `plan` before that run), and the pipeline's source with it; StorageError when there is
    no table yet, or the declaration names what it does not hold."""
    columns = table_schema(CheckpointLog("", table))
    if columns is None:
        raise StorageError(
            f"table {table}, which {pipeline.name} reads, has no committed rows to take a schema from yet: "
            f"run its pipeline first (python -m jobs run {pipeline.source.table})"
        )
    try:
        fields = {name: spelled(kind_of(kind)) for name, kind in columns.items()}
    except TypeSpellingError as error:
        raise StorageError(f"table {table}: a column's type is not one a source reads ({error})") from None
    source = pipeline.source.with_recorded_fields(fields)
    check_inferred(pipeline.model_copy(update={"source": source}))
    return fields, source


def _dimension(spark: SparkSession, pipeline: PipelineBase, locations: Locations) -> DataFrame:
    dimension = read_dimension(spark, pipeline.enrich, locations.dimensions)
    rows = check_dimension(dimension, pipeline.enrich)
    uri = pipeline.enrich.location(locations.dimensions)
    run_log(pipeline.name).info("  dimension %s: %d rows from %s", pipeline.enrich.table, rows, uri)
    return dimension


def context_with_spark(
    spark: SparkSession, pipeline: PipelineBase, request: RunRequest, *, lock: WriterLock, **given
) -> RunContext:
    """The rest of the preflight, with Spark: the recorded (or now inferred) schema, the
    dimension; then the contract is recorded. `given`: the context's run_id and emit."""
    from jobs import executors
    from jobs.session import set_runtime_conf

    locations = request.locations
    if pattern_of(pipeline).python_workers:
        executors.ship_package(spark)
    set_runtime_conf(
        spark, {"spark.sql.shuffle.partitions": str(pipeline.state_partitions)} | pipeline.spark_settings.sql_conf()
    )
    ledger = Ledger(locations.ledger)
    if pipeline.source.table is not None and ledger.recorded_schema() is None:
        _schema_of_table(pipeline, ledger, locations.landing)
    elif pipeline.source.infer_schema and ledger.recorded_schema() is None:
        _infer_schema(spark, pipeline, ledger, request.listed())
    dimension = _dimension(spark, pipeline, locations) if pipeline.enrich is not None else None
    ledger.record_contract(checkpoint_contract(pipeline, locations), pipeline.as_written)
    return RunContext(
        spark=spark,
        pipeline=with_quarantined_files(with_recorded_schema(pipeline, ledger), ledger),
        locations=locations,
        request=request,
        checkpoint_log=CheckpointLog.of(locations),
        ledger=ledger,
        tally=Tally(spark),
        dimension=dimension,
        lock=lock,
        log=run_log(pipeline.name),
        **given,
    )


def context_without_spark(pipeline: PipelineBase, request: RunRequest, *, lock: WriterLock, **given) -> RunContext:
    """What a run with nothing to read works with: the logs and the ledger, no Spark."""
    locations = request.locations
    return RunContext(
        spark=None,
        pipeline=pipeline,
        locations=locations,
        request=request,
        checkpoint_log=CheckpointLog.of(locations),
        ledger=Ledger(locations.ledger),
        tally=None,
        dimension=None,
        lock=lock,
        log=run_log(pipeline.name),
        **given,
    )


def check_table(spark: SparkSession, pipeline: PipelineBase, checkpoint_log: CheckpointLog, dimension) -> None:
    """Refuse a run whose transform now makes a table of other columns than the table has:
    the checkpoint's state and table hold what the old one made (a rebuild makes them again)."""
    if pipeline.transform is None:
        return
    from jobs.flow.query import output_schema
    from jobs.flow.transform import changed_table

    after = {f.name: f.dataType.simpleString() for f in output_schema(spark, pipeline, dimension).fields}
    changes = changed_table(pipeline.transform, table_schema(checkpoint_log), after)
    if changes:
        rebuild = jobs_command("rebuild", pipeline.name)
        raise IncompatibleCheckpoint(f"{changes[0]}; to make the table again with it: {rebuild} (docs/changes.md)")
