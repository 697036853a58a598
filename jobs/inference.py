"""Sources declared with `schema: infer`.

The first run lets Spark infer the schema of what has landed (the JSON file source with
`spark.sql.streaming.schemaInference`), checks that the fields the declaration names are
in it, and records it with the checkpoint (<checkpoint>/_pipeline/schema.json). Every
later run, and every validation, uses the recorded schema, so the table's columns do not
change under a running checkpoint. Fields that appear later are handled as the
declaration's `new_fields` says (jobs/transforms.py parse_events). To adopt them as
columns, start a fresh checkpoint: the next first run infers again.
"""

from __future__ import annotations

import json
from dataclasses import replace

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from jobs import storage
from jobs.spec import PipelineSpec
from jobs.storage import Locations, StorageError, join

_CORRUPT_RECORD = "_corrupt_record"  # what inference calls lines it could not read


def schema_uri(locations: Locations) -> str:
    return join(locations.pipeline_dir, "schema.json")


def recorded_schema(locations: Locations) -> dict[str, str] | None:
    uri = schema_uri(locations)
    if not storage.exists(uri):
        return None
    return json.loads(storage.read_text(uri))["fields"]


def with_recorded_schema(spec: PipelineSpec, locations: Locations) -> PipelineSpec:
    """The declaration with its recorded schema filled in (unchanged if it declares one,
    or if no run has recorded one yet)."""
    if not spec.source.infer_schema:
        return spec
    fields = recorded_schema(locations)
    return replace(spec, source=replace(spec.source, schema=fields)) if fields else spec


def infer_schema(spark: SparkSession, landing: str) -> dict[str, str]:
    """What Spark's streaming JSON source infers from the files under `landing`."""
    previous = spark.conf.get("spark.sql.streaming.schemaInference", "false")
    spark.conf.set("spark.sql.streaming.schemaInference", "true")
    try:
        schema = spark.readStream.format("json").option("recursiveFileLookup", "true").load(landing).schema
    except AnalysisException as error:
        raise StorageError(f"cannot infer a schema from {landing}: nothing usable has landed yet ({error})") from None
    finally:
        spark.conf.set("spark.sql.streaming.schemaInference", previous)
    return {f.name: f.dataType.simpleString() for f in schema.fields if f.name != _CORRUPT_RECORD}


def check_fields(spec: PipelineSpec, fields: dict[str, str]) -> None:
    """The fields the declaration names must be in the inferred schema."""
    named = {
        "event time": [spec.source.event_time.column],
        "required": list(spec.source.required),
        "keys": list(spec.keys),
        "deduplicate": list(spec.deduplicate),
        "aggregate": [a.column for a in spec.aggregates if a.column],
        "enrich key": [spec.enrich.key] if spec.enrich else [],
    }
    missing = {what: [c for c in columns if c not in fields] for what, columns in named.items()}
    missing = {what: columns for what, columns in missing.items() if columns}
    if missing:
        raise StorageError(
            f"the schema inferred for {spec.name} has no field(s) "
            + "; ".join(f"{what}: {columns}" for what, columns in missing.items())
            + f" (inferred: {', '.join(fields)})"
        )
    clashes = [c for c in (spec.enrich.columns if spec.enrich else ()) if c in fields]
    if clashes:
        raise StorageError(f"the schema inferred for {spec.name} already has the dimension's column(s) {clashes}")


def resolve(spark: SparkSession, spec: PipelineSpec, locations: Locations, landing: str, echo) -> PipelineSpec:
    """The declaration with its schema: recorded, or inferred now, checked and recorded."""
    if not spec.source.infer_schema:
        return spec
    if recorded_schema(locations) is None:
        fields = infer_schema(spark, landing)
        check_fields(spec, fields)
        storage.write_json(schema_uri(locations), {"inferred_from": landing, "fields": fields})
        echo(f"  inferred and recorded the schema: {', '.join(f'{k} {v}' for k, v in fields.items())}")
    return with_recorded_schema(spec, locations)
