"""Delta Lake tables (`output: {format: delta}`): the table's log read for each batch,
maintenance (OPTIMIZE of closed partitions, VACUUM within time travel), and what readers
outside Spark (delta-rs) see. Every shipped Delta pipeline's history is checked against its
model, Spark's reading against delta-rs's, in tests/histories.py; the crash tests run for
both formats (tests/e2e/test_crash.py)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.declare.load import DeclarationError, pipelines_dir
from jobs.lake import delta, listings
from jobs.lake.layout import Locations
from jobs.run.maintain import maintain, refuse_unless_maintainable
from jobs.units import UsageError
from jobs.validate.validation import validate_table
from tests.helpers import delta_rs_rows, land, run_pipeline

COLUMNS = ["window_start", "window_end", "rack", "avg_temperature", "max_temperature", "readings"]
DAY0 = datetime(2023, 7, 28, tzinfo=UTC)


def rack_temperatures(**retention) -> declare.PipelineBase:
    raw = yaml.safe_load((pipelines_dir() / "rack_temperatures.yaml").read_text())
    return declare.from_mapping({**raw, "retention": retention} if retention else raw)


def reading(rack: str, at: datetime, temperature: float) -> str:
    return json.dumps({"rack": rack, "temperature": temperature, "ts": at.strftime("%Y-%m-%dT%H:%M:%SZ")})


def small_runs(spark, pipeline, locations: Locations, runs: int) -> None:
    """`runs` runs of one small file each, six hours of event time apart."""
    for number in range(runs):
        at = DAY0 + timedelta(hours=6 * number)
        lines = [reading(f"rack{i % 3}", at + timedelta(minutes=i), 20.0 + i) for i in range(6)]
        land(locations.landing, {f"readings-{number:03d}.json": lines})
        report = run_pipeline(spark, pipeline, locations)
        assert report.status == "succeeded", report.error


def spark_rows(spark, output: str) -> list[tuple]:
    rows = spark.read.format("delta").load(output).select(*COLUMNS).collect()
    return sorted((r[0].replace(tzinfo=UTC), r[1].replace(tzinfo=UTC), *r[2:]) for r in rows)


def files_by_date(output: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for path in delta.table_files(output):
        date = path.split("window_date=")[1].split("/")[0]
        found[date] = found.get(date, 0) + 1
    return found


@pytest.fixture(scope="module")
def small_table(spark, tmp_path_factory):
    """rack_temperatures (a Delta table), made by eight small runs over two days of events."""
    pipeline = rack_temperatures(time_travel=0)
    locations = Locations.resolve(pipeline.name, root=str(tmp_path_factory.mktemp("delta") / "root"))
    small_runs(spark, pipeline, locations, 8)
    return pipeline, locations


def streamed_batches(output: str) -> list[int]:
    """The batch id of each version a stream committed (what its commitInfo says), in order."""
    infos = [a["commitInfo"] for v in delta.versions(output) for a in delta.commit(output, v) if "commitInfo" in a]
    said = [json.loads(i["userMetadata"]) for i in infos if i.get("userMetadata")]
    return [s["batch"] for s in said if "stream" in s]


def test_each_batch_is_one_version_that_names_its_files(small_table):
    _, locations = small_table
    checkpoint_log = CheckpointLog.of(locations)
    committed = checkpoint_log.committed_batches()
    assert streamed_batches(locations.output) == committed  # one version per batch, and only those
    written = [f for b in committed for f in checkpoint_log.sink_files(b)]
    assert sorted(written) == sorted(delta.table_files(locations.output))  # each file in exactly one batch


def test_a_batch_done_again_after_its_commit_adds_nothing(spark, tmp_path):
    """A run killed between Delta's commit of a batch and Spark's checkpoint does that batch
    again: it finds the version that says it is that batch of that query, and writes nothing;
    a table Delta's own streaming sink wrote (a `txn` action) is read the same."""
    from jobs.flow.sink import DeltaBatches

    checkpoint, output = tmp_path / "checkpoint", str(tmp_path / "table")
    checkpoint.mkdir()
    (checkpoint / "metadata").write_text(json.dumps({"id": "query-1"}))
    write = DeltaBatches(output, str(checkpoint), None)
    for batch_id in (0, 1, 1):  # batch 1 again, as after a restart
        write(spark.range(2), batch_id)
    assert delta.versions(output) == [0, 1]
    assert spark.read.format("delta").load(output).count() == 4
    assert [delta.batch_version(output, "query-1", b) for b in (0, 1, 2)] == [0, 1, None]
    assert delta.batch_version(output, "another query", 1) is None
    old_sink = [{"txn": {"appId": "query-0", "version": 7}}, {"add": {"path": "part-0.parquet"}}]
    assert delta._batch_of(old_sink, "query-0") == 7


def test_maintain_compacts_closed_partitions_and_vacuums_what_no_version_needs(spark, small_table):
    pipeline, locations = small_table
    rows = spark_rows(spark, locations.output)
    before = files_by_date(locations.output)
    disk_before = len(listings.list_files(locations.output))
    assert rows == sorted(delta_rs_rows(locations.output, COLUMNS))

    upkeep = maintain(spark, pipeline, locations, {})

    after = files_by_date(locations.output)
    last = max(before)  # the watermark's date: its windows may still be emitted
    assert upkeep.compacted == f"window_date < {last}"
    assert {d: n for d, n in after.items() if d < last} == {d: 1 for d in before if d < last}
    assert after[last] == before[last]  # an open partition is left to the stream
    assert (upkeep.table_files_before, upkeep.table_files_after) == (sum(before.values()), sum(after.values()))
    # time_travel 0: what OPTIMIZE replaced is gone from the folder; the table reads the same.
    assert upkeep.disk_files_after == sum(after.values()) < disk_before
    assert spark_rows(spark, locations.output) == sorted(delta_rs_rows(locations.output, COLUMNS)) == rows
    # The table is whole to Great Expectations as to any reader; the next run appends as before.
    assert validate_table(spark, pipeline, locations).status in ("passed", "warned")
    land(locations.landing, {"later.json": [reading("rack1", DAY0 + timedelta(days=3, hours=1), 30.0)]})
    assert run_pipeline(spark, pipeline, locations).status == "succeeded"
    assert spark_rows(spark, locations.output) == sorted(delta_rs_rows(locations.output, COLUMNS))


def test_maintain_refuses_a_parquet_table_and_an_empty_one(tmp_path):
    locations = Locations.resolve("clickstream", root=str(tmp_path))
    with pytest.raises(UsageError, match="clickstream's table is Parquet"):
        refuse_unless_maintainable(declare.load("clickstream"), locations)
    with pytest.raises(UsageError, match="nothing to maintain yet"):
        refuse_unless_maintainable(rack_temperatures(), Locations.resolve("rack_temperatures", root=str(tmp_path)))


def test_retention_settings_belong_to_their_format():
    with pytest.raises(DeclarationError, match="output_after is for a Parquet table"):
        rack_temperatures(output_after="30 days")
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    with pytest.raises(DeclarationError, match="time_travel is for a Delta table"):
        declare.from_mapping({**raw, "retention": {"time_travel": "1 day"}})
    assert rack_temperatures().retention.time_travel_s == 7 * 24 * 3600


def test_spark_settings_for_delta_only_where_a_table_is_delta():
    from jobs.session import CLASS_PATH, merged_conf, table_conf

    assert table_conf(["parquet"]) == {}
    conf = table_conf(["parquet", "delta"])
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    jars = conf[CLASS_PATH].split(os.pathsep)
    assert any(jar.endswith("delta-spark_2.13-4.4.0.jar") for jar in jars)
    both = merged_conf({CLASS_PATH: "/a.jar"}, conf)[CLASS_PATH].split(os.pathsep)
    assert both == ["/a.jar", *jars]


def test_the_lock_s_jars_are_read_where_they_are_not_copied_into_the_application(spark, tmp_path):
    """The session writes Delta tables and reads buckets (s3a), yet its scratch folder holds
    no copy of the jar lock's jars: they are on the JVM's class path (690 MB were copied per
    application with the SDK's bundle in `spark.jars`)."""
    from pyspark import SparkFiles

    from jobs.jvm import jars

    spark.range(3).write.format("delta").save(str(tmp_path / "table"))
    class_path = spark.sparkContext._jvm.System.getProperty("java.class.path").split(os.pathsep)
    locked = {str(path) for used_for in ("s3a", "delta") for path in jars.paths(used_for)}
    assert locked <= set(class_path)
    copied = {path.name for path in Path(SparkFiles.getRootDirectory()).rglob("*.jar")}
    assert not copied & {Path(path).name for path in locked}, copied
