"""Delta Lake tables (`output: {format: delta}`): Spark's settings for them, what their
transaction log says, and the one way the product commits to a table outside a run's
stream (`commit_once`: a backfill's replacement and its rollback, a rebuild's switch and
its rollback), found again after a restart rather than made twice.

    <output>/_delta_log/00000000000000000007.json   version 7: its commit's actions, one per line

A run commits each batch as one version whose commitInfo says the query (the checkpoint's
id) and the batch id (`batch_says`, jobs/flow/sink.py): when Spark redoes a batch whose
version is already in the log, nothing is written, so a batch's files are found by that, in
exactly one version. (Tables written before by Delta's streaming sink say it with a `txn`
action: read the same.) Versions are kept while Delta's log retention keeps them (30 days by
default); an older batch's files are then no longer known (None), as with the Parquet sink
log once compacted.

Readers outside Spark (delta-rs: `read_table`; DuckDB over delta-rs's Arrow dataset) read
the table through this log; files a batch wrote and never committed are never read, and
VACUUM removes them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from jobs.lake import fs
from jobs.lake.layout import join

if TYPE_CHECKING:
    import pyarrow
    import pyarrow.dataset
    from deltalake import DeltaTable
    from pyspark.sql import DataFrameWriter

# A session that writes or reads Delta tables: Delta's SQL extension and its catalog, beside
# the jars of the jar lock's `delta` (jobs/session.py table_conf).
SESSION_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Delta reads a table's state in this many tasks (50 by default): a few suit the log of
    # one pipeline's table, and each task costs a batch time on a small machine.
    "spark.databricks.delta.snapshotPartitions": "2",
    # A batch that adds no row is still a version that says it is that batch (jobs/flow/sink.py):
    # its accounting knows it added nothing, where no version would mean "no longer known".
    "spark.databricks.delta.skipRecordingEmptyCommits": "false",
    # A new table writes a checkpoint of its log every 50 versions, not Delta's 10: each costs
    # a Spark job (2.5 s of a backlog's 35 s here), and a reader replays at most 49 small
    # commits after the last one (delta-rs and Spark alike). A table made before keeps its own.
    "spark.databricks.delta.properties.defaults.checkpointInterval": "50",
}

LOG = "_delta_log"
_VERSION_DIGITS = 20


def is_delta(output: str) -> bool:
    """Whether the folder holds a Delta table (its log has a version)."""
    return bool(versions(output))


def versions(output: str) -> list[int]:
    names = fs.list_names(join(output, LOG))
    return sorted(int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit())


def commit(output: str, version: int) -> list[dict[str, Any]]:
    """The actions of one version of the table (a list of one-key dicts)."""
    text = fs.read_text(join(output, LOG, f"{version:0{_VERSION_DIGITS}d}.json"))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def user_metadata(output: str, version: int) -> dict[str, Any]:
    """What the writer of a version said of it (its commitInfo's userMetadata, as the product
    writes it: a JSON object); {} for a version that says nothing, or not in those words."""
    info = next((a["commitInfo"] for a in commit(output, version) if "commitInfo" in a), {})
    try:
        said = json.loads(info.get("userMetadata") or "{}")
    except ValueError:
        return {}
    return said if isinstance(said, dict) else {}


ATTEMPTS = 3  # a commit refused by Delta's conflict check (a writer outside the pipeline's lock) is tried again


def said(output: str, version: int) -> dict[str, Any]:
    """What the writer of a version said of it, without when (`commit_once` adds `at`)."""
    return {k: v for k, v in user_metadata(output, version).items() if k != "at"}


def find_commit(output: str, says: dict[str, Any], after: int = -1) -> int | None:
    """The first version after `after` whose writer said `says` (None: none did)."""
    return next((v for v in versions(output) if v > after and said(output, v) == says), None)


def commit_once(writer: DataFrameWriter, output: str, says: dict[str, Any], after: int = -1) -> int:
    """`writer` saved to the Delta table `output` in one commit that says `says` (and when),
    unless a version after `after` says it already: a writer started again after a crash
    finds its commit rather than making a second. That commit's version."""
    found = find_commit(output, says, after)
    if found is not None:
        return found
    metadata = json.dumps(says | {"at": datetime.now(UTC).isoformat(timespec="seconds")})
    for attempt in range(1, ATTEMPTS + 1):
        try:
            writer.option("userMetadata", metadata).save(output)
            break
        except Exception as error:  # Delta's conflict arrives as a JVM exception: told by its name
            if "Concurrent" not in str(error) or attempt == ATTEMPTS:
                raise
    found = find_commit(output, says, after)
    if found is None:
        raise RuntimeError(f"the commit that says {says} is not in {output}'s log")
    return found


def partition_columns(output: str) -> list[str]:
    """The table's partition columns, as its newest metadata action says."""
    for version in reversed(versions(output)):
        for action in commit(output, version):
            if "metaData" in action:
                return list(action["metaData"].get("partitionColumns") or [])
    return []


def batch_says(query_id: str, batch_id: int) -> str:
    """What a streaming batch's commit says of itself (its commitInfo's userMetadata)."""
    return json.dumps({"stream": query_id, "batch": batch_id})


def _batch_of(actions: list[dict[str, Any]], query_id: str) -> int | None:
    """The batch id a version committed for the query, if it is one of its batches: as its
    commit says (batch_says), or, written by Delta's streaming sink, as its `txn` action does."""
    for action in actions:
        txn = action.get("txn")
        if txn and txn.get("appId") == query_id:
            return int(txn["version"])
        info = action.get("commitInfo")
        if info and info.get("userMetadata"):
            try:
                said = json.loads(info["userMetadata"])
            except ValueError:
                continue
            if isinstance(said, dict) and said.get("stream") == query_id and isinstance(said.get("batch"), int):
                return said["batch"]
    return None


def batch_version(output: str, query_id: str, batch_id: int) -> int | None:
    """The version that committed the query's batch `batch_id`, or None when no version of
    the log still says (the batch is older than the log keeps, or never committed)."""
    for version in reversed(versions(output)):  # a run looks up its own, the newest, batches
        found = _batch_of(commit(output, version), query_id)
        if found == batch_id:
            return version
        if found is not None and found < batch_id:
            return None  # the query's batches are committed in order: it is not further back
    return None


def batch_files(output: str, query_id: str, batch_id: int) -> list[str] | None:
    """The data files the query's batch `batch_id` added to the table, or None when no version
    of the log still says (the batch is older than the log keeps, or never committed)."""
    version = batch_version(output, query_id, batch_id)
    if version is None:
        return None
    return sorted(join(output, unquote(a["add"]["path"])) for a in commit(output, version) if "add" in a)


def storage_options() -> dict[str, str]:
    """delta-rs's settings for a table in a bucket, from the environment (credentials stay there)."""
    from jobs.settings import settings

    config = settings()
    options = {"AWS_REGION": config.aws_region}
    if config.aws_endpoint_url:
        options["AWS_ENDPOINT_URL"] = config.aws_endpoint_url
        options["AWS_ALLOW_HTTP"] = str(config.aws_endpoint_url.startswith("http://")).lower()
    return options


def read_outside_spark(output: str, version: int | None = None) -> DeltaTable:
    """The table as delta-rs (the `deltalake` package, no Spark) opens it, local or in a bucket,
    at its newest version (or `version`): its log, schema and history. Read its rows with
    `arrow_dataset` or `read_table`."""
    from deltalake import DeltaTable

    from jobs.lake.layout import is_s3

    if is_s3(output):
        return DeltaTable(output.replace("s3a://", "s3://", 1), version=version, storage_options=storage_options())
    return DeltaTable(output, version=version)


def arrow_dataset(table: DeltaTable, output: str) -> pyarrow.dataset.Dataset:
    """The files of `table` (`output` as `read_outside_spark` opened it, at the version it is
    at) as an Arrow dataset that Arrow reads with its own filesystem (jobs/lake/fs.py).

    delta-rs's default hands Arrow a filesystem written in Python, whose open files Arrow's
    threads close after the read has returned: a process exiting then aborts ("terminate
    called without an active exception", docs/delta.md, "Reading a table without Spark")."""
    from pyarrow.fs import SubTreeFileSystem

    filesystem, base = fs.filesystem_of(output)
    return table.to_pyarrow_dataset(filesystem=SubTreeFileSystem(base, filesystem))


def read_table(output: str, columns: list[str] | None = None) -> pyarrow.Table:
    """The table's newest version as Arrow (all columns, or `columns`), read through its log."""
    return arrow_dataset(read_outside_spark(output), output).to_table(columns=columns)


def table_files(output: str, version: int | None = None) -> dict[str, dict[str, Any]]:
    """Path -> `size` and `modificationTime` of every data file the table's newest version (or
    `version`) holds: what any reader of the table reads (delta-rs replays the log)."""
    import pyarrow

    actions = pyarrow.table(
        read_outside_spark(output, version).get_add_actions(flatten=True)
    ).to_pylist()  # delta-rs gives an Arrow stream
    return {
        join(output, unquote(a["path"])): {"size": a["size_bytes"], "modificationTime": _ms(a["modification_time"])}
        for a in actions
    }


def _ms(moment: Any) -> int | None:
    if moment is None:
        return None
    if isinstance(moment, int):
        return moment
    return int(moment.timestamp() * 1000)
