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

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.columns import EVENT_TIME, INTERNAL, SOURCE_FILE
from jobs.declare.load import DeclarationError
from jobs.executors import cached_zip
from jobs.settings import settings

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from jobs.flow.tally import Tally

_imported: dict[str, str] = {}  # module -> its fingerprint when this process imported it
TRANSFORMED = f"{INTERNAL}transformed"  # what the counter says of a record given back: a column, then a filter


def _folder() -> Path | None:
    """The declarations folder, when it is a folder of this machine's (not the package's own)."""
    folder = settings().pipelines_dir
    return Path(folder) if folder is not None and Path(folder).is_dir() else None


def _module_file(module: str) -> Path | None:
    """The source file of `module` (dotted) in the declarations folder, or installed; None:
    found nowhere. Nothing is imported for a module of the folder."""
    folder = _folder()
    if folder is not None:
        base = folder.joinpath(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin and Path(spec.origin).is_file() else None


def fingerprint(name: str) -> str:
    """What a run records of the code `name` (module:function) names: its module's file and
    the SHA-256 of its source ("missing": found nowhere)."""
    path = _module_file(name.partition(":")[0])
    if path is None:
        return "missing"
    return f"{path.name} sha256:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"


def folder_zip(folder: Path) -> Path:
    """The folder's Python files (packages too; no link followed) as a zip in the cache, named
    by their content: built once per version of them."""
    files = []
    for root, dirs, names in os.walk(folder):  # followlinks=False: a link is not followed
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (Path(root) / d).is_symlink())
        files += [Path(root) / n for n in sorted(names) if n.endswith(".py") and not (Path(root) / n).is_symlink()]
    return cached_zip("declarations", folder, files)


def _ship_folder(spark: SparkSession) -> None:
    """Put the declarations folder's Python on the driver's path and the Python workers' (once
    per application): Spark hands an added zip to every worker, local or on a cluster."""
    folder = _folder()
    if folder is None:
        return
    archive = folder_zip(folder)
    context = spark.sparkContext
    if not any(shipped.endswith(f"/{archive.name}") for shipped in context.listFiles):
        context.addPyFile(str(archive))
        importlib.invalidate_caches()


def function_of(spark: SparkSession, name: str) -> Callable[[DataFrame], DataFrame]:
    """The function `name` (module:function) names, imported; DeclarationError naming it when
    its module does not import or has no such function."""
    module_name, _, function_name = name.partition(":")
    _ship_folder(spark)
    source = fingerprint(name)
    if _imported.get(module_name, source) != source:  # changed since this process imported it
        for loaded in [m for m in sys.modules if m == module_name or m.startswith(f"{module_name}.")]:
            del sys.modules[loaded]
    try:
        module = importlib.import_module(module_name)
        _imported[module_name] = source
    except Exception as error:  # noqa: BLE001 - whatever a team's module raises on import
        where = f"the declarations folder ({_folder()}) or " if _folder() else ""
        found = "" if _module_file(module_name) else f": no such module in {where}the installed packages"
        raise DeclarationError(
            f"transform {name!r}: module {module_name!r} does not import{found} ({type(error).__name__}: {error})"
        ) from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise DeclarationError(
            f"transform {name!r}: module {module_name!r} ({module.__file__}) has no function {function_name!r}"
        )
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
