"""Landing -> lines: what a run lists under the landing location, read as (line, source_file)
rows, streaming or batch alike; and the schema of a source declared `schema: infer`."""

from __future__ import annotations

import json

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.columns import BLOCK_START, FILE_SIZE, LINE, SOURCE_FILE
from jobs.declare import PipelineBase
from jobs.declare.parts import Source
from jobs.flow.admission import Limits
from jobs.lake.layout import StorageError, literal
from jobs.schema import kind_of, of_spark, outline, quoted, spelled

_CORRUPT_RECORD = "_corrupt_record"  # what inference calls lines it could not read

RECORD_LIMIT = 64 * 2**20  # bytes of a line the decoder reads; docs/accounting.md, "Poison records"
TOO_LARGE_KEPT = 2**20  # bytes of a line over the limit its quarantine record keeps (parse.py)

# Hadoop's line reader holds a whole line before it hands it on: one of 1.5 GiB ends the JVM.
# Past this it passes a line over instead, without holding it (every session sets it:
# jobs/session.py); jobs/accounting/long_lines.py counts and quarantines such a line. A line
# up to this long reaches the decoder, which quarantines one over RECORD_LIMIT itself.
READ_LIMIT = RECORD_LIMIT + 2**20
LINE_LIMIT_SETTING = "mapreduce.input.linerecordreader.line.maxlength"


# The product's streaming source of landed lines (the product's jar, on Spark's DataSource V2
# API): its own file log, whose index a start reads only for the folders it lists, and its
# batches sized from the state the query keeps (jobs/flow/admission.py).
LANDING_SOURCE = "io.triggeronce.jobs.source.LandingSource"


# A local landing is listed through the product's file system, which never shows a link, a fifo
# or a name the JVM cannot open (docs/storage.md, "What a run lists"): the source's own Hadoop
# configuration, so that nothing else of the application (a cluster's executors writing to a
# bucket) needs the product's jar on its class path. Not cached: Hadoop caches one file system
# a scheme, whatever configuration made it.
LANDING_OPTIONS = {
    "fs.file.impl": "io.triggeronce.jobs.fs.NoLinkLocalFileSystem",
    "fs.file.impl.disable.cache": "true",
}


def stream_lines(spark: SparkSession, path: str, landing: str, limits: Limits | None = None) -> DataFrame:
    """The streaming source: every line of every file under `path` (the landing `landing`, or
    a pattern of part of it: its new files' names, its dated folders), with where it was read
    from, at most `limits` per batch."""
    reader = spark.readStream.format(LANDING_SOURCE).option("landing", landing).options(**LANDING_OPTIONS)
    if limits and limits.max_files:
        reader = reader.option("maxFilesPerTrigger", limits.max_files)
    if limits and limits.max_bytes:
        reader = reader.option("maxBytesPerTrigger", limits.max_bytes)
    if limits and limits.max_bytes and limits.most_files:
        reader = reader.option("sizing.maxFiles", limits.most_files)
    if limits and limits.sized_cap:
        reader = reader.option("sizing.cap", limits.sized_cap).option("sizing.stateBudget", limits.state_budget)
    lines = reader.load(path)
    return lines.select(
        F.col("value").alias(LINE),
        F.col("file_path").alias(SOURCE_FILE),
        F.col("file_block_start").alias(BLOCK_START),
        F.col("file_size").alias(FILE_SIZE),
    )


def batch_sizes(progress_sources: list) -> list[dict[str, int]]:
    """What the landing source chose for each batch after its first, from a progress's
    sources (their metrics' `sizing`: every choice the query made so far)."""
    return [choice for s in progress_sources for choice in json.loads((s.metrics or {}).get("sizing") or "[]")]


def read_lines(spark: SparkSession, paths: list[str]) -> DataFrame:
    """The same rows from given files, as a batch DataFrame (through the landing's file
    system, as the stream read them: a name with a ':' is read too)."""
    return _with_file(spark.read.format("text").options(**LANDING_OPTIONS).load([literal(path) for path in paths]))


def stream_table(spark: SparkSession, table: str, source: Source, limits: Limits | None = None) -> DataFrame:
    """Another pipeline's table as the streaming source (`source: {table: ...}`), its rows
    reaching the flow as lines (`_as_lines`), each batch exactly what committed batches of the
    upstream wrote since the last, and each once. A Parquet table: Spark's file source reads
    a folder with a sink log (`_spark_metadata`) through that log, never its listing. A Delta
    table: Delta's source, whole versions a batch (jobs/lake/delta_source.py tells their files),
    passing over a version that rewrote rows (skipChangeCommits: what the reader owes)."""
    if source.table_format == "delta":
        reader = spark.readStream.format("delta").option("skipChangeCommits", "true")
        rows = reader.option("maxFilesPerTrigger", str(2**31 - 1)).load(table)
        read = rows.select(*(F.col(quoted(source.key_of(name))) for name in source.fields))
        return _as_lines(read, F.input_file_name(), F.lit(None).cast("long"))
    reader = spark.readStream.format("parquet").schema(_ddl(source))
    if limits and limits.max_files:
        reader = reader.option("maxFilesPerTrigger", limits.max_files)
    if limits and limits.max_bytes:
        reader = reader.option("maxBytesPerTrigger", limits.max_bytes)
    return _as_lines(reader.load(table))


def read_table(spark: SparkSession, table: str, source: Source, paths: list[str]) -> DataFrame:
    """The same rows from given files of the table, as a batch DataFrame (its partition
    folders read as the stream reads them, from the table's own folder; a Delta table's
    data files are Parquet files too)."""
    reader = spark.read.format("parquet").schema(_ddl(source)).option("basePath", table)
    return _as_lines(reader.load(paths))


def _ddl(source: Source) -> str:
    """The table's columns as recorded, by their names in the table (a source may read one
    under another name: Source.renamed)."""
    return ", ".join(f"{quoted(source.key_of(name))} {kind}" for name, kind in source.fields.items())


def _as_lines(rows: DataFrame, file: Column | None = None, size: Column | None = None) -> DataFrame:
    """A table's rows as the lines a landing gives: each row a JSON object (what the strict
    decoder then reads against the same schema: one path for every source, one account), with
    the data file it was read from (its rows are numbered in the part of it Spark read). Delta's
    source has no `_metadata` (delta-io/delta#2014): its file is `input_file_name()`."""
    row = F.to_json(F.struct(*(F.col(quoted(name)) for name in rows.columns)))
    return rows.select(
        row.alias(LINE),
        (F.col("_metadata.file_path") if file is None else file).alias(SOURCE_FILE),
        F.lit(0).cast("long").alias(BLOCK_START),
        (F.col("_metadata.file_size") if size is None else size).alias(FILE_SIZE),
    )


def _with_file(text: DataFrame) -> DataFrame:
    """Each line with its file, the byte its part of the file starts at (BLOCK_START: Spark
    reads a large file in parts), so that its lines can be numbered, and the file's size."""
    metadata = {SOURCE_FILE: "file_path", BLOCK_START: "file_block_start", FILE_SIZE: "file_size"}
    return text.select(F.col("value").alias(LINE), *(F.col(f"_metadata.{m}").alias(c) for c, m in metadata.items()))


def infer_schema(spark: SparkSession, path: str) -> dict[str, str]:
    """What Spark's streaming JSON source infers from the files under `path`."""
    previous = spark.conf.get("spark.sql.streaming.schemaInference", "false")
    spark.conf.set("spark.sql.streaming.schemaInference", "true")
    try:
        schema = (
            spark.readStream.format("json").option("recursiveFileLookup", "true").options(**LANDING_OPTIONS).load(path)
        ).schema
    except AnalysisException as error:
        why = "nothing usable has landed yet" if error.getCondition() == "UNABLE_TO_INFER_SCHEMA" else "Spark could not"
        raise StorageError(f"cannot infer a schema from {path}: {why} ({error})") from None
    finally:
        spark.conf.set("spark.sql.streaming.schemaInference", previous)
    return {f.name: spelled(of_spark(f.dataType)) for f in schema.fields if f.name != _CORRUPT_RECORD}


def schema_outline(fields: dict[str, str], width: int = 300) -> str:
    """An inferred schema in a line of at most about `width` characters: its top-level
    fields, an object as its number of fields, an array in brackets
    ('actor {6 fields}, commits [{4 fields}], id string')."""
    parts = [f"{name} {outline(kind_of(kind))}" for name, kind in fields.items()]
    shown = []
    for part in parts:
        if len(", ".join([*shown, part])) > width:
            return ", ".join(shown) + f" and {len(parts) - len(shown)} more"
        shown.append(part)
    return ", ".join(shown)


def check_inferred(pipeline: PipelineBase) -> None:
    """The fields the declaration names must be in the inferred schema (with its hints), and
    a dimension's columns must not be."""
    fields = pipeline.source.fields
    refused = pipeline.refused_fields()
    if refused:
        raise StorageError(
            f"the schema inferred for {pipeline.name}: " + "; ".join(refused) + f" (inferred: {', '.join(fields)})"
        )
    clashes = [c for c in (pipeline.enrich.columns if pipeline.enrich else ()) if c in fields]
    if clashes:
        raise StorageError(f"the schema inferred for {pipeline.name} already has the dimension's column(s) {clashes}")
