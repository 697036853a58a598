"""Events -> events with a dimension's columns: a stream-static join (the `enrich:` block).

A dimension is read as a plain batch DataFrame. In a stream-static join Spark runs the
static side again in every micro-batch, so an updated dimension file is picked up by the
next batch, with no restart. It is checked before the query starts: a missing file or a
key with two rows refuses the run, rather than losing or repeating events.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.columns import INTERNAL, QUARANTINE_REASON
from jobs.declare.parts import Enrichment
from jobs.flow.fields import field
from jobs.lake import fs
from jobs.lake.layout import StorageError, literal
from jobs.units import column_name


def read_dimension(spark: SparkSession, enrichment: Enrichment, dimensions: str) -> DataFrame:
    """The dimension table as declared: CSV with a header line (every column a string) or Parquet."""
    uri = enrichment.location(dimensions)
    if not fs.exists(uri):
        raise StorageError(f"dimension table {enrichment.table} not found at {uri}; put it there, or fix enrich.path")
    if enrichment.format == "csv":
        table = spark.read.option("header", "true").option("inferSchema", "false").csv(literal(uri))
    else:
        table = spark.read.parquet(literal(uri))
    missing = [c for c in (dimension_key(enrichment), *enrichment.columns) if c not in table.columns]
    if missing:
        raise StorageError(f"dimension table {enrichment.table} ({uri}) has no column(s) {missing}")
    return table.select(dimension_key(enrichment), *enrichment.columns)


def dimension_key(enrichment: Enrichment) -> str:
    """The dimension's column the events' key matches: the key's column_name (repo.id -> repo_id)."""
    return column_name(enrichment.key)


def check_dimension(table: DataFrame, enrichment: Enrichment) -> int:
    """The number of rows; refuses a dimension with two rows for one key (events would repeat)."""
    key = dimension_key(enrichment)
    repeated = table.groupBy(key).count().where(F.col("count") > 1).limit(3).collect()
    if repeated:
        keys = ", ".join(repr(row[key]) for row in repeated)
        raise StorageError(
            f"dimension table {enrichment.table} has more than one row for {key} {keys}: "
            "each event must match at most one row"
        )
    return table.count()


def enrich(parsed: DataFrame, dimension: DataFrame, enrichment: Enrichment) -> DataFrame:
    """Adds the dimension's columns to each event (a left join on `enrichment.key`).

    An event with no match keeps nulls, or with `unmatched: quarantine` is quarantined
    as no_match_in_<table> (unless it already had a reason). The dimension has one row per
    key (check_dimension), so no event is repeated.
    """
    matched = f"{INTERNAL}matched"
    lookup = dimension.select(
        F.col(dimension_key(enrichment)).alias(f"{INTERNAL}dimension_key"),
        *enrichment.columns,
        F.lit(True).alias(matched),
    )
    # An event's key is read as the dimension's type (what does not read as one matches
    # nothing): comparing them as they are would cast in ANSI mode, failing on a bad value.
    key = field(enrichment.key).try_cast(dimension.schema[dimension_key(enrichment)].dataType)
    joined = parsed.join(lookup, key == F.col(f"{INTERNAL}dimension_key"), "left").drop(f"{INTERNAL}dimension_key")
    if enrichment.unmatched == "quarantine":
        no_match = F.when(F.col(matched).isNull(), F.lit(f"no_match_in_{enrichment.table}"))
        joined = joined.withColumn(QUARANTINE_REASON, F.coalesce(QUARANTINE_REASON, no_match))
    return joined.drop(matched)
