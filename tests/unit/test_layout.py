"""The package's shape, as a specification: the folders follow the data, each stage imports
only the stages before it, nothing imports in a circle, and the stages that must run
without Spark (declarations, locations, processors, the Airflow DAG files) import none."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import REPO

PACKAGE = REPO / "jobs"
MAX_LINES = 350
# Stages in the order data flows; a module may import its own stage and earlier ones only.
# (Modules of the same stage may import each other.)
STAGES = {
    "units": 0,
    "schema": 0,
    "settings": 0,
    "columns": 0,
    "exit_codes": 0,
    "processors": 1,
    "declare": 2,
    "lake": 2,
    "request": 2,  # what a caller asks of a run: read by the flow (its trigger) and every caller
    "jvm": 3,
    "session": 3,
    "executors": 3,
    "flow": 3,
    "accounting": 4,  # every row of each batch, exactly: what the flow counted, kept in the ledger
    "run": 5,
    "history": 5,  # each run's and validation's row in the pipeline's event log; asked without Spark
    "validate": 6,
    "launch": 7,  # a run then its validation; several runs in one application
    "backfill": 7,
    "change": 7,  # a changed declaration: its plan reads the run's check and the flow's schema
    "quality_report": 8,  # its page shows backfills and their published versions
    "orchestration": 9,
    "cli": 9,
    "entry": 10,
    "__main__": 10,
}
MAX_TOP_LEVEL_MODULES = 8  # beside the packages: jobs/ stays a map of its stages
NO_SPARK = (
    "units",
    "settings",
    "columns",
    "exit_codes",
    "processors",
    "declare",
    "lake",
    "request",
    "executors",
    "orchestration",
)


def modules() -> dict[str, Path]:
    """jobs.x.y -> its file."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(path: Path, top_level_only: bool = False) -> set[str]:
    """The modules `path` imports (every import, or only those at module level)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def internal(names: set[str], known: dict[str, Path]) -> set[str]:
    return {name for name in names if name in known}


def stage(module: str) -> str:
    return module.split(".")[1] if module != "jobs" else "jobs"


def test_the_package_s_top_holds_at_most_eight_modules():
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_module_is_over_350_lines():
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_import_graph_has_no_cycle():
    known = modules()
    graph = {name: internal(imports(path), known) - {name} for name, path in known.items()}
    # A package imports its own modules through __init__; that is not a cycle of the design.
    graph = {name: {d for d in deps if not d.startswith(f"{name}.")} for name, deps in graph.items()}
    visiting, done = set(), set()

    def visit(name: str, trail: list[str]) -> None:
        if name in done:
            return
        assert name not in visiting, f"import cycle: {' -> '.join([*trail, name])}"
        visiting.add(name)
        for dependency in sorted(graph[name]):
            visit(dependency, [*trail, name])
        visiting.discard(name)
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


@pytest.mark.parametrize("module", sorted(m for m in modules() if m != "jobs"))
def test_each_stage_imports_only_itself_and_earlier_stages(module):
    known = modules()
    own = STAGES[stage(module)]
    later = {d for d in internal(imports(known[module]), known) if d != "jobs" and STAGES[stage(d)] > own}
    assert later == set(), f"{module} (stage {stage(module)}) imports later stages"


@pytest.mark.parametrize("module", sorted(m for m in modules() if m != "jobs" and stage(m) in NO_SPARK))
def test_stages_that_run_without_spark_do_not_import_it_at_module_level(module):
    path = modules()[module]
    heavy = {
        name for name in imports(path, top_level_only=True) if name.split(".")[0] in ("pyspark", "great_expectations")
    }
    assert heavy == set()


def test_each_stage_says_what_it_owns():
    for folder in sorted(p for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
        assert docstring and len(docstring.splitlines()[0]) > 20, folder.name


def test_every_module_is_named_in_its_package_docstring():
    """The package docstrings are the module map (the docs site renders them): a module
    (`name.py`) or subpackage (`name/`) missing from its package's docstring fails here."""
    missing = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        folder = init.parent
        docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
        named = [f"{p.name}" for p in folder.glob("*.py") if p.name != "__init__.py"]
        named += [f"{d.name}/" for d in folder.iterdir() if (d / "__init__.py").exists() or d.name == "pipelines"]
        missing += [f"{folder.relative_to(REPO)}/{name}" for name in sorted(named) if name not in docstring]
    assert missing == []
