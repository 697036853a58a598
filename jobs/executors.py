"""What executors on a cluster need from the driver: the product's jar, and, for a
processor's pipeline, the jobs package and which Python runs it.

Every pipeline's lines are read and counted in the JVM, by the product's jar, which Spark
hands to the executors (`spark.jars`, jobs/session.py): a window, events or join pipeline
needs nothing else on a node. A processor runs in Spark's Python workers: on `local[...]`
they run on this machine, in this interpreter; on a cluster nothing of the driver's
filesystem or PYTHONPATH is assumed: its application ships a zip of the installed package
(SparkContext.addPyFile, what `--py-files` does), and the executors run the nodes' own
`python3` (or PYSPARK_PYTHON), which needs pyspark and the libraries a processor imports
(docs/cluster.md).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import zipfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.lake.layout import Locations, StorageError, is_s3
from jobs.settings import settings

if TYPE_CHECKING:  # imported by the Airflow side, which starts no Spark of its own
    from pyspark.sql import SparkSession

NODE_PYTHON = "python3"


def is_local(master: str) -> bool:
    return master.startswith("local")


def executor_python(master: str) -> str:
    """The Python the executors start: PYSPARK_PYTHON if set, else this interpreter on this
    machine, else the nodes' `python3` (a path on the driver means nothing on a node)."""
    return os.environ.get("PYSPARK_PYTHON") or (sys.executable if is_local(master) else NODE_PYTHON)


def check_reachable(master: str, locations: Locations) -> None:
    """Refuse a cluster run whose executors would read or write this machine's disk: on
    another node a local path is that node's own disk, and the run would scatter its table
    and state across them. Unless every node mounts the same filesystem (a setting)."""
    if is_local(master) or settings().shared_filesystem:
        return
    seen_by_executors = (
        locations.landing,
        locations.output,
        locations.checkpoint,
        locations.quarantine,
        locations.dimensions,
    )
    local = [uri for uri in seen_by_executors if uri and not is_s3(uri)]  # no dimensions: ""
    if local:
        raise StorageError(
            f"on a cluster ({master}) the executors read and write {local[0]}, which is a path on "
            "this machine: put the root in a bucket (--root s3a://...), or set JOBS_SHARED_FILESYSTEM=true "
            "if every node mounts it at the same path"
        )


def package_zip() -> Path:
    """The installed jobs package as a zip in the cache, named by its content: built once per
    version of the code, and never changed under an application that ships it."""
    package = Path(str(resources.files("jobs")))
    files = sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return cached_zip("jobs", package, files, "jobs/")


def cached_zip(name: str, folder: Path, files: list[Path], inside: str = "") -> Path:
    """`files` of `folder` as a zip in the cache (each under `inside` + its path in the
    folder), named `name` and a digest of their paths and content: built once per version."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    target = settings().cache_dir.resolve() / "dist" / f"{name}-{digest.hexdigest()[:12]}.zip"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with (
            tempfile.NamedTemporaryFile(dir=target.parent, suffix=".part", delete=False) as part,
            zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as archive,
        ):
            for path in files:
                archive.write(path, f"{inside}{path.relative_to(folder).as_posix()}")
        os.replace(part.name, target)  # whole or absent, whichever run builds it
    return target


def ship_package(spark: SparkSession) -> Path | None:
    """Ship the package to the executors of a cluster application (once per application);
    the zip shipped, or None on a local master."""
    context = spark.sparkContext
    if is_local(context.master):
        return None
    archive = package_zip()
    if not any(shipped.endswith(f"/{archive.name}") for shipped in context.listFiles):
        context.addPyFile(str(archive))
    return archive
