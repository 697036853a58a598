"""Field types spelled as text and read back (jobs/schema.py), against Spark's own parser."""

from __future__ import annotations

import pytest
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from jobs import schema
from jobs.schema import Array, Struct

ODD = Struct((("@id", "long"), ("a:b,c", "string"), ("tick`s", Array("double")), ("", "boolean")))


@pytest.mark.parametrize(
    "kind",
    [
        "string",
        "decimal(38,0)",
        Struct((("id", "long"), ("name", "string"))),
        Array(Struct((("sha", "string"), ("n", "int")))),
        Array(Array("date")),
        Struct((("payload", Struct((("commits", Array(Struct((("sha", "string"),)))),))),)),
        ODD,
    ],
)
def test_a_type_reads_back_as_it_was_spelled_and_spark_reads_it_the_same(spark, kind):
    text = schema.spelled(kind)
    assert schema.kind_of(text) == kind
    # Spark's DDL parser reads the same type (names in backticks included).
    parsed = spark.createDataFrame([], f"x {schema.spelled(kind)}").schema["x"].dataType
    assert schema.of_spark(parsed) == kind


def test_spark_s_names_read_as_the_declaration_s_and_what_is_not_a_type_is_refused():
    assert schema.kind_of("struct<id:bigint,n:integer,ok:boolean>") == Struct(
        (("id", "long"), ("n", "int"), ("ok", "boolean"))
    )
    for text in ("varchar", "decimal(39,0)", "decimal(2,3)", "map<string,int>"):
        with pytest.raises(schema.TypeSpellingError):
            schema.kind_of(text)


def test_inferred_types_come_from_spark_s_schema():
    inferred = StructType(
        [StructField("repo", StructType([StructField("id", LongType()), StructField("tags", ArrayType(StringType()))]))]
    )
    assert schema.of_spark(inferred["repo"].dataType) == Struct((("id", "long"), ("tags", Array("string"))))


def test_paths_find_and_set_types_through_objects():
    fields = {"repo": Struct((("id", "string"), ("name", "string"))), "tags": Array("string")}
    assert schema.at_path(fields, "repo.name") == "string"
    assert schema.at_path(fields, "repo.owner") is None
    assert schema.at_path(fields, "tags.x") is None
    hinted = schema.with_type_at(fields, "repo.id", "long")
    assert hinted["repo"] == Struct((("id", "long"), ("name", "string")))
    added = schema.with_type_at(fields, "meta.source.kind", "string")
    assert schema.spelled(added["meta"]) == "struct<source:struct<kind:string>>"
