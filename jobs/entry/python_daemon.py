"""The Python workers' daemon on a local master: pyspark's own, with pyspark imported from
its installed package rather than from Spark's zip of it.

Spark puts its copy of pyspark (pyspark/python/lib/pyspark.zip) first on the path of every
Python process it starts: spark-submit's driver and each Python worker. Python caches no
compiled bytecode for a module imported from a zip, so each of them compiled pyspark afresh:
about 0.5 s of CPU per process, a second or two of a small run (measured: a one-file run
14.6 -> 13.8 s, its spark-submit 16.3 -> 13.9 s). The zip and the installed package are the
same files when the zip lies inside that package, which is the only case changed here.

Only a processor's pipeline starts Python workers (lines are read and counted in the JVM:
jobs/flow/functions.py). The daemon imports what its workers import (pandas, pyarrow, the
guard and the tally) before it forks them: each worker starts without importing them and
shares those pages with it until it writes to them. `gc.freeze` keeps the workers'
collector off the shared objects, whose pages it would otherwise copy.
"""

from __future__ import annotations

import gc
import sys
from importlib.machinery import PathFinder
from pathlib import Path


def prefer_installed_pyspark() -> None:
    """Move Spark's zips of pyspark and py4j behind the installed pyspark they came with."""
    zips = [entry for entry in sys.path if entry.endswith(".zip") and "pyspark" in Path(entry).parts]
    if not zips:
        return
    rest = [entry for entry in sys.path if entry not in zips]
    installed = PathFinder.find_spec("pyspark", rest)
    if installed is None or not installed.submodule_search_locations:
        return
    package = Path(next(iter(installed.submodule_search_locations))).resolve()
    if all(Path(entry).resolve().is_relative_to(package) for entry in zips):
        sys.path[:] = rest + zips


def preload() -> None:
    """Import what the workers' flow needs, once, for the forked workers to share."""
    import pandas  # noqa: F401 - what a processor's group function gets
    import pyarrow  # noqa: F401

    import jobs.flow.guard
    import jobs.flow.tally  # noqa: F401 - numpy and pyspark with it

    gc.freeze()


if __name__ == "__main__":  # spark.python.daemon.module: Spark runs `python -m` this
    prefer_installed_pyspark()
    preload()
    from pyspark.daemon import manager

    manager()
