"""The decoder and the counter in the JVM (the product's jar, jvm/): SQL functions of a
session, and the tally they count into.

    jobs_decode_N(line, source_file, block_start, file_size)  -> the declared fields, the
        line's number, its reason and detail (io.triggeronce.jobs.sql.Decode; the reading of
        tests/reference/decode.py, which stays the reference it is tested against)
    jobs_count_N(source_file, late_at_us, rescued, broken, reason, (block_start, line_number,
        line, detail), filtered, key_hash) -> usable?  (io.triggeronce.jobs.sql.Count)
    jobs_transformed_N(source_file, late_at_us) -> true: a record a transform gave back
        (io.triggeronce.jobs.sql.Transformed; jobs/flow/transform.py)

No Python worker reads a line: a window, events or join pipeline runs in the JVM alone.
Each function is registered in the session it runs in, under a name of its own (it holds
its declaration and its run's tally).
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING

from jobs.schema import Array, Kind, Struct

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from jobs.declare.parts import Source

_names = itertools.count()


def functions(spark: SparkSession):
    """io.triggeronce.jobs.sql.Functions of the session's JVM."""
    return spark.sparkContext._jvm.io.triggeronce.jobs.sql.Functions


def kind_json(kind: Kind) -> object:
    """A type as the JVM's decoder reads it (io.triggeronce.jobs.decode.Kind.of)."""
    if isinstance(kind, Struct):
        return {"struct": [[name, kind_json(field)] for name, field in kind.fields]}
    if isinstance(kind, Array):
        return {"array": kind_json(kind.element)}
    return kind


def decoder_config(source: Source) -> str:
    """What the JVM's decoder reads a source's lines by: its declared fields and options."""
    return json.dumps(
        {
            "fields": [[source.key_of(name), kind_json(kind)] for name, kind in source.kinds.items()],
            "coerce": source.types == "coerce",
            "new_fields": source.new_fields != "ignore",
            "rescue": source.on_type_mismatch == "rescue",
            "max_depth": source.max_depth,
            "quarantined_files": dict(source.quarantined_files),
        }
    )


def register_decode(spark: SparkSession, source: Source, tally_jvm) -> str:
    """The decoder of `source` as a function of the session (counting the lines it reads in
    `tally_jvm`, the JVM's tally, when given); its name."""
    name = f"jobs_decode_{next(_names)}"
    functions(spark).registerDecode(spark._jsparkSession, name, decoder_config(source), tally_jvm)
    return name


def register_count(spark: SparkSession, rules: tuple[str, ...], tally_jvm, transforms: bool = False) -> str:
    """The counter of parsed records as a function of the session (`transforms`: the records
    it keeps go through a transform next); its name."""
    name = f"jobs_count_{next(_names)}"
    functions(spark).registerCount(spark._jsparkSession, name, json.dumps(list(rules)), transforms, tally_jvm)
    return name


def register_transformed(spark: SparkSession, transform: str, tally_jvm) -> str:
    """The counter of the records the transform `transform` gives back; its name."""
    name = f"jobs_transformed_{next(_names)}"
    functions(spark).registerTransformed(spark._jsparkSession, name, transform, tally_jvm)
    return name
