"""What a cluster's executors get from the driver (jobs/executors.py), without Spark."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark
import pytest

from jobs import executors
from jobs.entry import python_daemon
from jobs.lake.layout import Locations, StorageError
from tests.helpers import REPO


def test_the_package_zip_holds_the_package_and_its_data_and_is_named_by_its_content(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBS_CACHE_DIR", str(tmp_path))
    archive = executors.package_zip()
    assert archive.parent == tmp_path / "dist" and archive.name.startswith("jobs-")
    names = zipfile.ZipFile(archive).namelist()
    assert {"jobs/__init__.py", "jobs/flow/guard.py", "jobs/pipelines/clickstream.yaml"} <= set(names)
    assert not [name for name in names if "__pycache__" in name]
    assert executors.package_zip() == archive  # the same code, the same file

    # Importable from the zip alone: no site-packages, no checkout on the path.
    probe = subprocess.run(
        [sys.executable, "-S", "-c", "import jobs.columns; print(jobs.columns.__file__)"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(archive)},
        capture_output=True,
        text=True,
    )
    assert probe.stdout.strip() == f"{archive}/jobs/columns.py", probe.stderr


def test_executors_run_this_interpreter_locally_and_the_nodes_python_on_a_cluster(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert executors.executor_python("local[2]") == sys.executable
    assert executors.executor_python("spark://master:7077") == "python3"
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python/bin/python3")
    assert executors.executor_python("yarn") == "/opt/python/bin/python3"


def test_a_cluster_run_refuses_locations_on_this_machines_disk(monkeypatch):
    local = Locations.resolve("clickstream", root="./data")
    executors.check_reachable("local[*]", local)
    executors.check_reachable("spark://master:7077", Locations.resolve("clickstream", root="s3a://lake/prod"))
    with pytest.raises(StorageError, match=r"on a cluster \(spark://master:7077\) .*data/landing/clickstream"):
        executors.check_reachable("spark://master:7077", local)
    monkeypatch.setenv("JOBS_SHARED_FILESYSTEM", "true")
    executors.check_reachable("spark://master:7077", local)


# What Spark's Python workers import of the package (the tally, the processor
# guard, the processors), and libraries a cluster node's Python need not have.
WORKER_MODULES = (
    "jobs.flow.tally",
    "jobs.flow.guard",
    "jobs.processors",
)
NOT_ON_NODES = ("yaml", "pydantic_settings", "airflow", "great_expectations", "boto3", "jinja2")


def test_what_the_workers_import_needs_nothing_a_node_may_lack():
    """A node runs its own python3 with pyspark, pandas, pyarrow, numpy and msgspec: the
    modules its workers import must not pull in the driver's other libraries."""
    script = f"""
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {NOT_ON_NODES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not on a cluster node)")
sys.meta_path.insert(0, Refuse())
import importlib
for module in {WORKER_MODULES!r}:
    importlib.import_module(module)
"""
    imported = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False)
    assert imported.returncode == 0, imported.stderr[-2000:]


SPARK_ZIPS = sorted(str(path) for path in (Path(pyspark.__file__).parent / "python" / "lib").glob("*.zip"))


def test_spark_submits_driver_imports_pyspark_from_its_package_not_sparks_zip():
    """spark-submit puts Spark's zips first on the driver's path (as here, through PYTHONPATH);
    a module from a zip is compiled afresh in every process. The entry moves them behind the
    installed package they came with."""
    script = (
        "from jobs.entry.python_daemon import prefer_installed_pyspark\n"
        "prefer_installed_pyspark()\n"
        "import pyspark, py4j.java_gateway\n"
        "print(pyspark.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(SPARK_ZIPS)}
    unchanged = subprocess.run(
        [sys.executable, "-c", "import pyspark; print(pyspark.__file__)"], env=env, capture_output=True, text=True
    )
    assert ".zip" in unchanged.stdout  # what spark-submit's path does without the entry's move
    moved = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True)
    assert moved.returncode == 0, moved.stderr[-2000:]
    assert moved.stdout.strip() == pyspark.__file__


def test_a_zip_of_another_spark_keeps_its_place(monkeypatch):
    other = ["/opt/spark/python/lib/pyspark.zip", "/opt/spark/python/lib/py4j-0.10.9.9-src.zip"]
    monkeypatch.setattr(sys, "path", [*other, *sys.path])
    before = list(sys.path)
    python_daemon.prefer_installed_pyspark()
    assert sys.path == before


def test_local_python_workers_run_the_daemon_that_imports_the_installed_pyspark(spark):
    assert spark.conf.get("spark.python.daemon.module") == python_daemon.__name__
    imported = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("pyspark").__file__).collect()
    assert imported == [pyspark.__file__]
