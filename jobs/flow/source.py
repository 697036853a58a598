"""Landing -> lines: what a run lists under the landing location, read as (line, source_file)
rows, streaming or batch alike; and the schema of a source declared `schema: infer`."""

from __future__ import annotations

from datetime import date

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.columns import BLOCK_START, FILE_SIZE, LINE, SOURCE_FILE
from jobs.declare import PipelineBase
from jobs.flow.line_reader import RECORD_LIMIT
from jobs.lake.landing import dated_folders
from jobs.lake.layout import StorageError, join, literal
from jobs.schema import kind_of, of_spark, outline, spelled
from jobs.units import UsageError

_CORRUPT_RECORD = "_corrupt_record"  # what inference calls lines it could not read

# Hadoop's line reader holds a whole line before it hands it on: one of 1.5 GiB ends the JVM.
# Past this it passes a line over instead, without holding it (every session sets it:
# jobs/session.py); jobs/accounting/long_lines.py counts and quarantines such a line. A line
# up to this long reaches the decoder, which quarantines one over RECORD_LIMIT itself.
READ_LIMIT = RECORD_LIMIT + 2**20
LINE_LIMIT_SETTING = "mapreduce.input.linerecordreader.line.maxlength"


def landing_path(landing: str, glob: str | None = None, since: date | None = None, until: date | None = None) -> str:
    """What the source lists: the landing location, or only part of it.

    A long history under date-organised prefixes (landing/dt=2023-07-30/hour=10/...)
    would be listed in full by every run. `glob` (e.g. 'dt=2023-07-*/*') or `since` (only
    the dt=YYYY-MM-DD folders from that date on; `until` stops at a date, for backfills)
    narrow the listing. Files already processed are remembered by the checkpoint either
    way, so narrowing never reprocesses; it only keeps older files from being listed.
    """
    if glob and (since or until):
        raise UsageError("use --landing-glob or --landing-since/--landing-until, not both")
    if until and not since:
        raise UsageError("--landing-until needs --landing-since")
    if since and until and since > until:
        raise UsageError(f"--landing-since {since} is after --landing-until {until}")
    if glob:
        if glob.startswith("/") or ".." in glob.split("/"):
            raise UsageError(f"--landing-glob {glob!r}: give a pattern inside the landing location")
        return join(literal(landing), glob)  # the operator's pattern, under the landing as it is named
    if since:
        # One listing of the top level only, then the source lists just these folders.
        folders = dated_folders(landing, since, until)
        if not folders:
            return join(literal(landing), f"dt={since.isoformat()}")  # nothing yet: an empty folder lists nothing
        return join(literal(landing), _any_of(folders))
    return literal(landing)


def new_files_path(landing: str, files: tuple[str, ...]) -> str | None:
    """What the source lists when the run knows which files are new: their names under the
    landing location, level by level (`dt={a,b}/{x.json,y.json}`), so that a long history
    is not listed again for a few new files; None when they lie at different depths (the
    landing is listed whole). The pattern may match a file taken before (another folder's
    name): Spark's source log passes it over, as it does when the whole landing is listed.
    A file that lands meanwhile is the next run's, as one landing a moment after any
    listing; a file gone meanwhile matches nothing."""
    parts = [file.removeprefix(landing.rstrip("/") + "/").split("/") for file in files]
    if len({len(names) for names in parts}) != 1:
        return None
    # Hadoop keeps a pattern's escapes only in braces without a '/' (a brace with one is
    # expanded first, its escapes lost): one brace per level.
    return join(literal(landing), "/".join(_any_of(sorted(set(level))) for level in zip(*parts, strict=True)))


def _any_of(names: list[str]) -> str:
    """A pattern that matches exactly these names."""
    escaped = [literal(name) for name in names]
    return escaped[0] if len(escaped) == 1 else "{" + ",".join(escaped) + "}"


def stream_lines(
    spark: SparkSession, path: str, max_files_per_trigger: int | None, max_bytes_per_trigger: int | None
) -> DataFrame:
    """The streaming source: every line of every file landed under `path`, with where it
    was read from (`_with_file`)."""
    reader = spark.readStream.format("text").option("recursiveFileLookup", "true")
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", max_files_per_trigger)
    if max_bytes_per_trigger:
        reader = reader.option("maxBytesPerTrigger", max_bytes_per_trigger)
    return _with_file(reader.load(path))


def read_lines(spark: SparkSession, paths: list[str]) -> DataFrame:
    """The same rows from given files, as a batch DataFrame."""
    return _with_file(spark.read.format("text").load([literal(path) for path in paths]))


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
        schema = spark.readStream.format("json").option("recursiveFileLookup", "true").load(path).schema
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
