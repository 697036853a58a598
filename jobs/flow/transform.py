"""A declaration's transform: a team's own function, DataFrame -> DataFrame, between the
declaration's `where` and the pattern.

    transform: my_transforms:tag_internal      # module:function

The module is found in the declarations folder (JOBS_PIPELINES_DIR) or among the installed
packages. Loading a declaration never imports it (the DAG files load declarations); `plan`
and a run do, once Spark has started, and a module that does not import, or has no such
function, is refused naming it (DeclarationError: exit 2).

Where it runs: on each source's usable events the `where` keeps, after the watermark has seen
them all (so a changed transform moves the watermark no more than a changed `where` does), and
before the pattern reads its keys and values, which the transform may make. What it may do:
add, change and drop columns of its own, drop rows. What it may not: add rows, move them
between tasks (an aggregate, a distinct, a sort, a repartition, a join that shuffles), or
change the product's columns (`_jobs_...`, `event_time`): each record handed to it is
counted as filtered until it comes back out (io.triggeronce.jobs.sql.Transformed), and a
task that gets back more records of a file than it handed in fails the batch, naming the
transform, before anything of the batch is committed.

The declarations folder's Python goes to Spark's Python workers (and a cluster's executors)
as a zip (SparkContext.addPyFile), as the package does (jobs/executors.py); its modules'
sources are fingerprinted (`fingerprint`), so that a run logs, and `plan` shows, a transform
changed since the checkpoint's last run.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.columns import EVENT_TIME, INTERNAL, SOURCE_FILE
from jobs.declare.code import fingerprint, folder, imported
from jobs.declare.load import DeclarationError
from jobs.executors import cached_zip

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from jobs.flow.tally import Tally

TRANSFORMED = f"{INTERNAL}transformed"  # what the counter says of a record given back: a column, then a filter


def folder_zip(folder: Path) -> Path:
    """The folder's Python files (packages too; no link followed) as a zip in the cache, named
    by their content: built once per version of them."""
    files = []
    for root, dirs, names in os.walk(folder):  # followlinks=False: a link is not followed
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (Path(root) / d).is_symlink())
        files += [Path(root) / n for n in sorted(names) if n.endswith(".py") and not (Path(root) / n).is_symlink()]
    return cached_zip("declarations", folder, files)


def ship_folder(spark: SparkSession) -> None:
    """Put the declarations folder's Python on the driver's path and the Python workers' (once
    per application): Spark hands an added zip to every worker, local or on a cluster."""
    here = folder()
    if here is None:
        return
    archive = folder_zip(here)
    context = spark.sparkContext
    if not any(shipped.endswith(f"/{archive.name}") for shipped in context.listFiles):
        context.addPyFile(str(archive))
        importlib.invalidate_caches()


def by_value(code: type) -> None:
    """Pickle `code`'s module, and every module of the declarations folder, by value: Spark
    starts a Python of the driver's own for a transformWithStateInPandas processor (to learn
    its state's schema), which gets no added zip (pyspark 4.2)."""
    from pyspark import cloudpickle

    here = folder()
    for module in [m for m in list(sys.modules.values()) if getattr(m, "__file__", None)]:
        if module.__name__ == code.__module__ or (here and Path(module.__file__).is_relative_to(here)):
            cloudpickle.register_pickle_by_value(module)


def function_of(spark: SparkSession, name: str) -> Callable[[DataFrame], DataFrame]:
    """The function `name` (module:function) names, imported; DeclarationError naming it when
    its module does not import or has no such function."""
    ship_folder(spark)
    try:
        function = imported(name, "transform", "function")
    except ValueError as error:
        raise DeclarationError(str(error)) from None
    if not callable(function):
        raise DeclarationError(f"transform {name!r}: {function!r} is not a function")
    return function


def transformed(events: DataFrame, name: str, late_at: Column | None, tally: Tally | None) -> DataFrame:
    """`events` through the transform `name`, checked to keep the product's columns as they
    were; with a tally, each record it gives back counted (and when it is late: `late_at`)."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from jobs.flow.functions import register_transformed

    result = function_of(events.sparkSession, name)(events)
    if not isinstance(result, DataFrame):
        raise DeclarationError(f"transform {name!r} returned a {type(result).__name__}, not a DataFrame")
    before, after = ({f.name: f for f in frame.schema.fields} for frame in (events, result))
    own = [c for c in before if c.startswith(INTERNAL) or c == EVENT_TIME]
    changed = [c for c in own if c not in after or after[c].dataType != before[c].dataType]
    if changed:
        raise DeclarationError(
            f"transform {name!r} must keep the product's columns as they were; it dropped or changed {changed} "
            "(add columns with withColumn, or select('*', ...), rather than selecting a list)"
        )
    if EVENT_TIME in before and before[EVENT_TIME].metadata != after[EVENT_TIME].metadata:
        raise DeclarationError(
            f"transform {name!r} changed {EVENT_TIME!r}, which the watermark follows; keep it as it was"
        )
    if tally is None:
        return result
    count = register_transformed(events.sparkSession, name, tally.jvm)
    late = F.lit(None).cast("long") if late_at is None else F.unix_micros(late_at)
    given_back = F.call_function(count, F.col(SOURCE_FILE), late)
    return result.withColumn(TRANSFORMED, given_back).where(F.col(TRANSFORMED)).drop(TRANSFORMED)


def changed_table(name: str, before: dict[str, str] | None, after: dict[str, str]) -> list[str]:
    """What a checkpoint cannot outlive of a change of the transform `name`: a table of other
    columns (or types) than the one its rows were written to (`before`; None: no table yet)."""
    if before is None or before == after:
        return []
    changed = [
        f"{column} {before.get(column, 'absent')} -> {after.get(column, 'absent')}"
        for column in sorted(set(before) | set(after))
        if before.get(column) != after.get(column)
    ]
    return [f"transform {name!r} ({fingerprint(name)}) makes a table of other columns: {', '.join(changed)}"]
