"""A small committed output as a pandas DataFrame, read from its files with pyarrow, for Great
Expectations' pandas engine: most runs of a trigger-once pipeline commit a few small files, and
validating them needs no Spark job. Outputs larger than SMALL_BYTES go to Spark
(jobs/validate/validation.py); tests/integration/test_validation_engines.py shows that every
shipped suite gives the same verdicts and counts on both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.accounting.checkpoint import CheckpointLog
from jobs.declare import PipelineBase
from jobs.lake import delta, fs
from jobs.lake.layout import join

if TYPE_CHECKING:
    import pandas
    import pyarrow

# Committed files up to this size (Parquet, compressed) are read into this process: a few
# times that in memory, and well under a second of reading.
SMALL_BYTES = 64 * 2**20


def small_table(
    pipeline: PipelineBase, checkpoint_log: CheckpointLog, files: list[str] | None
) -> tuple[pandas.DataFrame, int] | None:
    """The committed `files` (None: the whole table) as pandas, and how many files were read,
    when they are at most SMALL_BYTES; None when they are larger, or when only Spark knows the
    table's columns."""
    output = checkpoint_log.output
    is_delta = delta.is_delta(output)
    if not is_delta and not fs.list_names(join(output, "_spark_metadata")):
        return None  # a batch job's table (a staged backfill): Spark reads it whole
    if files is None:
        table = checkpoint_log.committed_output_files() or {}
        sizes = {path: entry["size"] for path, entry in table.items()}
    else:
        sizes = {path: fs.size(path) for path in files}
    if any(size is None for size in sizes.values()) or sum(sizes.values()) > SMALL_BYTES:
        return None
    schema = _schema(checkpoint_log, is_delta, sorted(sizes), pipeline.output.partition_by)
    if schema is None:
        return None
    return read_files(output, sorted(sizes), schema, pipeline.output.partition_by), len(sizes)


def _schema(
    checkpoint_log: CheckpointLog, is_delta: bool, files: list[str], partition: str | None
) -> pyarrow.Schema | None:
    """The table's columns as written: Delta's log, or a committed file's footer (and the
    partition column); None for a Parquet table with no file yet."""
    import pyarrow

    if is_delta:
        return pyarrow.schema(delta.read_outside_spark(checkpoint_log.output).schema().to_arrow())
    some = files[:1] or sorted(checkpoint_log.committed_output_files() or {})[-1:]
    return footer_schema(some[0], partition) if some else None


def footer_schema(file: str, partition: str | None) -> pyarrow.Schema:
    """A Parquet file's columns, and the partition column its folder names (a UTC date)."""
    import pyarrow
    import pyarrow.parquet as pq

    filesystem, path = fs.filesystem_of(file)
    written = pq.read_schema(path, filesystem=filesystem)
    if partition and partition not in written.names:
        written = written.append(pyarrow.field(partition, pyarrow.date32()))
    return written


def read_files(output: str, files: list[str], schema: pyarrow.Schema, partition: str | None) -> pandas.DataFrame:
    """Parquet files of the table at `output` as pandas, the partition column from their folders."""
    import pyarrow
    import pyarrow.dataset as ds

    if not files:
        return _pandas(schema.empty_table())
    filesystem, base = fs.filesystem_of(output)
    partitioning = None
    if partition:  # Hive-style folders (event_date=2023-07-30/), as Spark and Delta write them
        partitioning = ds.partitioning(pyarrow.schema([schema.field(partition)]), flavor="hive")
    paths = [fs.filesystem_of(path)[1] for path in files]
    dataset = ds.dataset(
        paths,
        schema=schema,
        format="parquet",
        filesystem=filesystem,
        partitioning=partitioning,
        partition_base_dir=base,
    )
    return _pandas(dataset.to_table())


def _pandas(table: pyarrow.Table) -> pandas.DataFrame:
    """pandas with Spark's reading of numbers: pandas' nullable dtypes keep a null (missing)
    apart from NaN (a value, above every other in Spark), where NumPy's would make both NaN."""
    import pandas
    import pyarrow

    nullable = {
        pyarrow.int8(): pandas.Int8Dtype(),
        pyarrow.int16(): pandas.Int16Dtype(),
        pyarrow.int32(): pandas.Int32Dtype(),
        pyarrow.int64(): pandas.Int64Dtype(),
        pyarrow.float32(): pandas.Float32Dtype(),
        pyarrow.float64(): pandas.Float64Dtype(),
        pyarrow.bool_(): pandas.BooleanDtype(),
    }
    return table.to_pandas(date_as_object=True, types_mapper=nullable.get)
