"""Dimension tables that events are enriched from (a declaration's `enrich:` block).

A dimension is read as a plain batch DataFrame. In a stream-static join Spark runs the
static side again in every micro-batch, so an updated dimension file is picked up by the
next batch, with no restart. It is checked before the query starts: a missing file or a
key with two rows refuses the run, rather than losing or repeating events.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import storage
from jobs.spec import Enrichment, PipelineSpec
from jobs.storage import Locations, StorageError


def dimension_uri(enrichment: Enrichment, locations: Locations) -> str:
    """A relative path is under <root>/dimensions/; a full path or URI is used as it is."""
    if enrichment.path.startswith("/") or "://" in enrichment.path:
        return storage.normalize(enrichment.path)
    return storage.join(locations.dimensions, enrichment.path)


def read_dimension(spark: SparkSession, spec: PipelineSpec, locations: Locations) -> DataFrame | None:
    """The pipeline's dimension table (None if it declares none), as declared: CSV with a
    header line (every column a string) or Parquet."""
    enrichment = spec.enrich
    if enrichment is None:
        return None
    uri = dimension_uri(enrichment, locations)
    if not storage.exists(uri):
        raise StorageError(f"dimension table {enrichment.table} not found at {uri}; put it there, or fix enrich.path")
    if enrichment.format == "csv":
        table = spark.read.option("header", "true").option("inferSchema", "false").csv(uri)
    else:
        table = spark.read.parquet(uri)
    missing = [c for c in (enrichment.key, *enrichment.columns) if c not in table.columns]
    if missing:
        raise StorageError(f"dimension table {enrichment.table} ({uri}) has no column(s) {missing}")
    return table.select(enrichment.key, *enrichment.columns)


def check_dimension(table: DataFrame, spec: PipelineSpec) -> int:
    """The number of rows; refuses a dimension with two rows for one key (events would repeat)."""
    enrichment = spec.enrich
    repeated = table.groupBy(enrichment.key).count().where(F.col("count") > 1).limit(3).collect()
    if repeated:
        keys = ", ".join(repr(row[enrichment.key]) for row in repeated)
        raise StorageError(
            f"dimension table {enrichment.table} has more than one row for {enrichment.key} {keys}: "
            "each event must match at most one row"
        )
    return table.count()
