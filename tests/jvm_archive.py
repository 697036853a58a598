"""A class-data-sharing archive of Spark's JVM, so that the suite's JVMs start faster.

Every Spark application the tests start (the test processes' own sessions, each
`python -m jobs` process, each spark-submit of an Airflow task) loads some 15,000 classes
from Spark's jars before it does anything; on this kind of machine that is about half of
a small run's start. The JDK can map classes it loaded once from an archive instead
(AppCDS): `python -m tests.jvm_archive PATH` runs a small pipeline and validation so the
JVM dumps what they loaded at exit, and `java_options` points later JVMs at the archive.

Nothing else changes: a JVM whose class path differs (another SPARK_CONF_DIR) or another
JDK ignores the archive silently and loads its classes as before.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from tests.helpers import REPO

BASE_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # tests run small data: no optimizing compiler
_QUIET = "-Xlog:cds=off,cds+dynamic=off"  # a JVM that cannot use the archive says nothing


def _java_version() -> str:
    found = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    named = re.search(r'version "([^"]+)"', found.stderr + found.stdout)
    return named.group(1) if named else "unknown"


def archive_path(cache: Path) -> Path:
    """One archive per JDK and Spark: either changing makes a new one."""
    return cache / "jvm" / f"spark-{version('pyspark')}-{_java_version()}.jsa"


def ensure_archive(cache: Path) -> Path | None:
    """The archive, made first if there is none yet (about 30 s); None if it could not be."""
    path = archive_path(cache)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    env = {**os.environ, "JAVA_TOOL_OPTIONS": f"{BASE_OPTIONS} -XX:ArchiveClassesAtExit={partial} {_QUIET}"}
    # The pipes stay open until the JVM has exited, so the dump is complete when this returns.
    made = subprocess.run(
        [sys.executable, "-m", "tests.jvm_archive"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    if made.returncode != 0 or not partial.exists() or partial.stat().st_size == 0:
        partial.unlink(missing_ok=True)
        print(f"tests: no JVM class archive ({made.returncode}): {made.stderr[-500:]}", file=sys.stderr)
        return None
    partial.replace(path)
    return path


def java_options(archive: Path | None) -> str:
    return f"{BASE_OPTIONS} -XX:SharedArchiveFile={archive} {_QUIET}" if archive else BASE_OPTIONS


def _load_classes() -> None:
    """What a test run's JVMs mostly do: a streaming pipeline over two arrivals, its
    validation, reading the table."""
    from demo import samples
    from jobs import declare
    from jobs.lake.layout import Locations
    from jobs.run import runner
    from jobs.session import get_spark
    from jobs.validate.validation import validate_run
    from tests.helpers import land

    spark = get_spark("jvm-archive", {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    pipeline = declare.load("clickstream")
    with tempfile.TemporaryDirectory() as root:
        locations = Locations.resolve(pipeline.name, root=root)
        for arrival in samples.arrivals(pipeline.name)[:2]:
            land(locations.landing, arrival)
            report = runner.run(pipeline, locations, runner.RunOptions(), spark=spark)
            validate_run(spark, pipeline, locations, report)
        spark.read.parquet(locations.output).collect()
    spark.stop()


if __name__ == "__main__":
    _load_classes()
