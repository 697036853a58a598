"""What the JVM that makes the class archive runs (jobs/jvm/archive.py): what the product's JVMs
mostly do, a streaming pipeline over two arrivals and its validation, reading the table, into
Parquet and (when the jar lock's Delta jars are fetched) into Delta.

    python -m jobs.cli.warm_up      (run by `python -m jobs jvm-archive`)
"""

from __future__ import annotations

import os
import tempfile

from jobs.jvm.archive import CLASS_PATH


def load_classes() -> None:
    from jobs import declare
    from jobs.flow.sink import read_table
    from jobs.jvm import archived_jars
    from jobs.lake.landing import land_lines
    from jobs.lake.layout import Locations
    from jobs.launch import execute
    from jobs.request import RunRequest
    from jobs.run.application import Application

    formats = ["parquet", "delta"] if archived_jars() else ["parquet"]
    shipped = declare.load("clickstream")
    pipelines = [
        shipped.model_copy(update={"output": shipped.output.model_copy(update={"format": table_format})})
        for table_format in formats
    ]
    # The application a run of each table format starts (its class path, what the archive maps).
    spark = Application.for_command("jvm-archive", pipelines, []).session()
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    for pipeline in pipelines:
        with tempfile.TemporaryDirectory() as root:
            locations = Locations.resolve(pipeline.name, root=root)
            for arrival in range(2):
                lines = [
                    f'{{"event_id": "e{arrival}-{i}", "user_id": "u{i % 3}", "event": "click", '
                    f'"eventtimestamp": "2023-07-30T1{arrival}:0{i}:00Z"}}'
                    for i in range(5)
                ]
                land_lines({f"arrival-{arrival}.json": lines}, locations.landing)
                request = RunRequest(pipeline.name, locations)
                for _ in execute(request, pipeline=pipeline, spark=spark):  # the run, then its validation
                    pass
            read_table(spark, locations.output).collect()
    print(f"{CLASS_PATH}{spark.sparkContext._jvm.System.getProperty('java.class.path')}")
    spark.stop()
    _end_the_jvm()


def _end_the_jvm() -> None:
    """End the JVM (its stdin closed, as when Python exits) and wait while it dumps its classes:
    its output goes to the log file, not to the pipes `make_archive` waits on, so without this
    the archive was taken while the JVM was still writing it (1 MB of its 180)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = gateway.proc
    gateway.shutdown()
    process.stdin.close()
    process.wait(timeout=600)


if __name__ == "__main__":
    os.environ["OPENLINEAGE_DISABLED"] = "true"  # a warm-up's runs are no one's lineage
    load_classes()
