"""Readers of a Delta table without Spark, as docs/delta.md shows them: each of its code
blocks runs as written, offline (DuckDB may neither download nor load an extension), on a
table delta-rs writes (three commits, one replacing a partition, whose old file stays in the
folder), and returns the rows written; and `jobs.lake.delta.read_table`, locally and in a
bucket, gives Arrow a filesystem of its own (no Python file in Arrow's threads, whose
closing aborted Python at exit). No Spark."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

import pyarrow
import pyarrow.fs
import pytest

from jobs.lake import delta
from tests.helpers import REPO

DOCS = REPO / "docs" / "delta.md"
TABLE = "data/tables/rack_temperatures"  # where the docs' blocks read, from the working folder
COLUMNS = ["window_start", "window_end", "rack", "avg_temperature", "max_temperature", "readings", "window_date"]
SCHEMA = pyarrow.schema(
    [
        ("window_start", pyarrow.timestamp("us", tz="UTC")),
        ("window_end", pyarrow.timestamp("us", tz="UTC")),
        ("rack", pyarrow.string()),
        ("avg_temperature", pyarrow.float64()),
        ("max_temperature", pyarrow.float64()),
        ("readings", pyarrow.int64()),
        ("window_date", pyarrow.date32()),
    ]
)


def at(day: int, hour: int, minute: int) -> datetime:
    return datetime(2023, 7, day, hour, minute, tzinfo=UTC)


JULY_29 = [
    (at(29, 10, 0), at(29, 10, 10), "rack1", 21.5, 23.0, 4, date(2023, 7, 29)),
    (at(29, 10, 0), at(29, 10, 10), "rack2", 30.0, 31.0, 2, date(2023, 7, 29)),
]
JULY_30 = [(at(30, 0, 5), at(30, 0, 15), "rack1", 22.0, 22.5, 3, date(2023, 7, 30))]
JULY_29_FIXED = [
    (at(29, 10, 0), at(29, 10, 10), "rack1", 21.0, 23.0, 5, date(2023, 7, 29)),
    (at(29, 10, 0), at(29, 10, 10), "rack2", 29.0, 31.0, 2, date(2023, 7, 29)),
]
AT_VERSION_1 = sorted(JULY_29 + JULY_30)
NEWEST = sorted(JULY_29_FIXED + JULY_30)  # version 2 replaced July 29


def write_table(uri: str, storage_options: dict[str, str] | None = None) -> None:
    """Version 0: July 29; version 1: July 30 added; version 2: July 29 replaced."""
    from deltalake import write_deltalake

    def rows(values: list[tuple]) -> pyarrow.Table:
        return pyarrow.Table.from_pylist([dict(zip(COLUMNS, row, strict=True)) for row in values], schema=SCHEMA)

    options = {"partition_by": ["window_date"], "storage_options": storage_options}
    write_deltalake(uri, rows(JULY_29), mode="append", **options)
    write_deltalake(uri, rows(JULY_30), mode="append", **options)
    write_deltalake(uri, rows(JULY_29_FIXED), mode="overwrite", predicate="window_date = '2023-07-29'", **options)


def as_tuples(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(row[c] for c in COLUMNS) for row in rows)


def docs_blocks() -> dict[str, str]:
    """The Python blocks of docs/delta.md's "Reading a table without Spark", by reader."""
    text = DOCS.read_text()
    section = text.split("## Reading a table without Spark\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    by_reader = {("duckdb" if "import duckdb" in block else "delta-rs"): block for block in blocks}
    assert len(by_reader) == len(blocks) == 2, "a reader the docs show needs its own test here"
    return by_reader


@pytest.fixture
def docs_table(tmp_path, monkeypatch):
    """The folder the docs' blocks run in, with the table where they read it."""
    write_table(str(tmp_path / TABLE))
    monkeypatch.chdir(tmp_path)
    return tmp_path / TABLE


def test_the_folder_holds_a_file_no_version_reads(docs_table):
    # the replaced partition's file stays until VACUUM: a reader that lists the folder sees it
    assert len(list(docs_table.rglob("*.parquet"))) == len(["v0", "v1", "v2"])


def test_delta_rs_reads_the_newest_version_and_an_older_one_as_the_docs_show(docs_table, capsys):
    seen: dict = {}
    exec(compile(docs_blocks()["delta-rs"], str(DOCS), "exec"), seen)
    assert as_tuples(seen["rows"]) == NEWEST
    assert as_tuples(seen["rows_then"]) == AT_VERSION_1
    assert "WRITE" in capsys.readouterr().out  # the history: delta-rs's own commits here


@pytest.fixture
def offline_duckdb(tmp_path):
    """DuckDB's default connection (the docs' `duckdb.sql`) with no extension downloaded or
    loaded behind the caller's back, and none to load: an empty extension folder. Yields that
    folder and the extensions loaded before (those built into the wheel)."""
    import duckdb

    folder = tmp_path / "duckdb_extensions"
    folder.mkdir()
    offline = {
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "extension_directory": f"'{folder}'",
    }
    for name, value in offline.items():
        duckdb.execute(f"SET {name} = {value}")
    built_in = {
        name for (name,) in duckdb.sql("SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()
    }
    yield folder, built_in
    for name in offline:
        duckdb.execute(f"RESET {name}")


def test_duckdb_reads_the_table_offline_as_the_docs_show(docs_table, offline_duckdb):
    import duckdb

    folder, built_in = offline_duckdb
    with pytest.raises(duckdb.CatalogException, match="delta"):  # the extension's way: not here
        duckdb.sql(f"SELECT * FROM delta_scan('{TABLE}')")

    seen: dict = {}
    exec(compile(docs_blocks()["duckdb"], str(DOCS), "exec"), seen)
    expected = {
        rack: sum(row[3] for row in NEWEST if row[2] == rack) / sum(1 for row in NEWEST if row[2] == rack)
        for rack in {row[2] for row in NEWEST}
    }
    assert dict(seen["averages"]) == pytest.approx(expected)
    assert list(folder.iterdir()) == []  # nothing downloaded
    loaded = {name for (name,) in duckdb.sql("SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()}
    assert loaded == built_in


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_read_table_reads_the_newest_version_with_arrow_s_own_filesystem(where, tmp_path, request):
    if where == "bucket":
        output = request.getfixturevalue("s3_root") + "/tables/rack_temperatures"
        write_table(output.replace("s3a://", "s3://", 1), delta.storage_options())
    else:
        output = str(tmp_path / "tables" / "rack_temperatures")
        write_table(output)

    assert as_tuples(delta.read_table(output).to_pylist()) == NEWEST
    some = delta.read_table(output, ["rack", "readings"])
    assert some.column_names == ["rack", "readings"]
    assert sorted(some.to_pylist(), key=repr) == sorted(({"rack": r[2], "readings": r[5]} for r in NEWEST), key=repr)
    dataset = delta.arrow_dataset(delta.read_outside_spark(output), output)
    assert not isinstance(dataset.filesystem.base_fs, pyarrow.fs.PyFileSystem)  # no Python in Arrow's threads
