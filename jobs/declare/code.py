"""A team's own Python a declaration names (`module:name`): a transform's function, a
processor's class. Found in the declarations folder (JOBS_PIPELINES_DIR) first, then among
the installed packages; imported here without Spark (a processor's module when its
declaration loads, to check its settings; a transform's only by `plan` and a run); its
module's source fingerprinted, so that a run records, and `plan` shows, a change of it.

A module changed since this process imported it is imported again (a long-lived process,
as Airflow's DAG processor is, sees the new code).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

from jobs.declare.problems import did_you_mean
from jobs.settings import settings

_imported: dict[str, str] = {}  # module -> its fingerprint when this process imported it

# A processor's module is imported where declarations load, with no Spark running (DAG files).
_NEEDS_SPARK = (
    "; its top level needs a running Spark, and a processor's module is imported without one when"
    " its declaration loads: give pandas_udf a type object (StringType(), not 'string'), or keep"
    " what needs Spark in a module of its own (docs/python.md)"
)


def folder() -> Path | None:
    """The declarations folder, when it is a folder of this machine's (not the package's own)."""
    found = settings().pipelines_dir
    return Path(found) if found is not None and Path(found).is_dir() else None


def module_file(module: str) -> Path | None:
    """The source file of `module` (dotted) in the declarations folder, or installed; None:
    found nowhere. Nothing is imported for a module of the folder."""
    here = folder()
    if here is not None:
        base = here.joinpath(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin and Path(spec.origin).is_file() else None


def fingerprint(name: str) -> str:
    """What a run records of the code `name` (module:name) names: its module's file and the
    SHA-256 of its source ("missing": found nowhere)."""
    path = module_file(name.partition(":")[0])
    if path is None:
        return "missing"
    return f"{path.name} sha256:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"


def _import(module_name: str):
    """The module, its top package taken from the declarations folder when there (ahead of an
    installed one of that name); the folder is on the path after the installed packages, for
    the modules it imports of its own."""
    here = folder()
    top = module_name.partition(".")[0]
    if here is not None:
        if str(here) not in sys.path:
            sys.path.append(str(here))
        spec = importlib.machinery.PathFinder.find_spec(top, [str(here)])
        if spec is not None and top not in sys.modules:
            module = importlib.util.module_from_spec(spec)
            sys.modules[top] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[top]
                raise
    return importlib.import_module(module_name)


def imported(name: str, what: str, noun: str) -> object:
    """What `name` (module:name) names, imported; ValueError naming it (as `what`, e.g.
    "transform") when its module does not import or has no such `noun` (e.g. "function")."""
    module_name, _, attribute = name.partition(":")
    source = fingerprint(name)
    if _imported.get(module_name, source) != source:  # changed since this process imported it
        for loaded in [m for m in sys.modules if m == module_name or m.startswith(f"{module_name}.")]:
            del sys.modules[loaded]
    try:
        module = _import(module_name)
        _imported[module_name] = source
    except Exception as error:  # noqa: BLE001 - whatever a team's module raises on import
        where = f"the declarations folder ({folder()}) or " if folder() else ""
        found = "" if module_file(module_name) else f": no such module in {where}the installed packages"
        raise ValueError(
            f"{what} {name!r}: module {module_name!r} does not import{found} ({type(error).__name__}: {error})"
            + (_NEEDS_SPARK if "SESSION_OR_CONTEXT_NOT_EXISTS" in str(error) else "")
        ) from None
    if not hasattr(module, attribute):
        known = [n for n in vars(module) if not n.startswith("_")]
        raise ValueError(
            f"{what} {name!r}: module {module_name!r} ({module.__file__}) has no {noun} {attribute!r}"
            + did_you_mean(attribute, known)
        )
    return getattr(module, attribute)
