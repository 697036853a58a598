"""The event logs read without Spark: every pipeline's under a root (its builds' too), as
two DuckDB views, `runs` and `batches`, that SQL is asked over.

    <root>/runs/<pipeline>/history/{runs,batches}                       the pipeline's
    <root>/builds/<pipeline>/<build>/runs/<pipeline>/history/{...}      a rebuild's build's

The tables are read through their Delta logs (delta-rs says which files are each table's;
DuckDB reads local ones, Arrow those in a bucket); DuckDB then answers over them in memory,
with no access to files of its own once they are read (a query names only the two views).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import unquote

import pyarrow as pa

from jobs.history import rows
from jobs.history.log import FOLDER, TABLES, location
from jobs.lake import fs
from jobs.lake.layout import FOLDERS, is_s3, join, normalize

if TYPE_CHECKING:
    import duckdb

_SCHEMAS = {"runs": rows.RUNS, "batches": rows.BATCHES}
# A file's path DuckDB reads as it is: no glob character, no quote (the runs folder's names are
# a filesystem's, whatever a producer made there; the log's own file names are plain).
_PLAIN = re.compile(r"[\w./=-]+")


def run_folders(root: str, pipeline: str | None = None) -> list[str]:
    """Every folder of run reports under `root` that holds an event log (of `pipeline` only)."""
    base = normalize(root)
    found = []
    for name in sorted(fs.list_names(join(base, FOLDERS["runs"]))):
        if pipeline in (None, name):
            found.append(join(base, FOLDERS["runs"], name))
    builds = join(base, "builds")
    for name in sorted(fs.list_names(builds)):
        if pipeline not in (None, name):
            continue
        for build in sorted(fs.list_names(join(builds, name))):
            found.append(join(builds, name, build, FOLDERS["runs"], name))
    return [folder for folder in found if FOLDER in fs.list_names(folder)]


def files(root: str, pipeline: str | None = None, tables: tuple[str, ...] = TABLES) -> dict[str, list[str]]:
    """The Parquet files each log says are its table's (runs, batches), over every log under `root`."""
    from jobs.lake import delta

    found: dict[str, list[str]] = {name: [] for name in tables}
    for folder in run_folders(root, pipeline):
        for name in tables:
            uri = location(folder, name)
            if delta.is_delta(uri):
                # delta-rs names a bucket's files s3://, the product's filesystems s3a://; and it
                # percent-encodes a name ('a root' is 'a%20root'), which no filesystem here does.
                uris = delta.read_outside_spark(uri).file_uris()
                found[name] += [unquote(re.sub(r"^s3://", "s3a://", f)) for f in uris]
    return found


def connect(
    root: str, pipeline: str | None = None, since: datetime | None = None, sql: str | None = None
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the views `runs` and `batches` (rows at or after `since`);
    given the `sql` it is for, a table it does not name is left empty, unread."""
    import duckdb

    named = tuple(name for name in TABLES if sql is None or name in sql.lower())
    connection = duckdb.connect()
    for name, found in {**{name: [] for name in TABLES}, **files(root, pipeline, named)}.items():
        _load(connection, f"_{name}", found, _SCHEMAS[name])
        column = "started_at" if name == "runs" else "committed_at"
        # A view takes no parameter: the moment is a datetime, written here, never a user's text.
        where = f" WHERE {column} >= TIMESTAMPTZ '{since.isoformat()}'" if since else ""
        connection.execute(f"CREATE VIEW {name} AS SELECT * FROM _{name}{where}")
    connection.execute("SET enable_external_access = false")  # a query reads the views, never a file
    return connection


def _load(connection: duckdb.DuckDBPyConnection, table: str, uris: list[str], schema: pa.Schema) -> None:
    """The files into a table of the connection: local ones by DuckDB's own reader (no glob:
    the names are the log's, checked); in a bucket, through Arrow; none, an empty table."""
    if not uris:
        columns = ", ".join(f"{field.name} {_duckdb_type(field.type)}" for field in schema)
        connection.execute(f"CREATE TABLE {table} ({columns})")
        return
    if not any(is_s3(uri) for uri in uris) and all(_PLAIN.fullmatch(uri) for uri in uris):
        connection.execute(
            f"CREATE TABLE {table} AS SELECT * FROM read_parquet($files, union_by_name = true)", {"files": uris}
        )
        return
    import pyarrow.dataset as ds

    filesystem = fs.filesystem_of(uris[0])[0]
    paths = [fs.filesystem_of(uri)[1] for uri in uris]
    scanned = ds.dataset(paths, format="parquet", schema=schema, filesystem=filesystem).to_table()
    connection.from_arrow(scanned).create(table)  # DuckDB imports pandas for an Arrow table: 0.3 s


def _duckdb_type(kind: pa.DataType) -> str:
    """DuckDB's name of a column type of the log's schema."""
    if pa.types.is_list(kind):
        return f"{_duckdb_type(kind.value_type)}[]"
    if pa.types.is_struct(kind):
        return "STRUCT(" + ", ".join(f"{f.name} {_duckdb_type(f.type)}" for f in kind) + ")"
    if pa.types.is_timestamp(kind):
        return "TIMESTAMPTZ"
    names = {pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "VARCHAR"}
    return names[kind]
