"""What a cluster's executors get from the driver (jobs/executors.py), without Spark."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from jobs import executors
from jobs.lake.layout import Locations, StorageError
from tests.helpers import REPO


def test_the_package_zip_holds_the_package_and_its_data_and_is_named_by_its_content(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBS_CACHE_DIR", str(tmp_path))
    archive = executors.package_zip()
    assert archive.parent == tmp_path / "dist" and archive.name.startswith("jobs-")
    names = zipfile.ZipFile(archive).namelist()
    assert {"jobs/__init__.py", "jobs/flow/decode.py", "jobs/pipelines/clickstream.yaml"} <= set(names)
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


# What Spark's Python workers import of the package (the decoder, the tally, the processor
# guard, the processors), and libraries a cluster node's Python need not have.
WORKER_MODULES = (
    "jobs.flow.decode",
    "jobs.flow.line_reader",
    "jobs.flow.tally",
    "jobs.flow.guard",
    "jobs.flow.depth",
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
