"""Reading declarations: YAML files into checked Pipeline models, and errors a person can act on.

Declarations ship with the package (jobs/pipelines/*.yaml, found as package data);
JOBS_PIPELINES_DIR points at another folder of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from jobs.declare.pipeline import PATTERNS, Pipeline, PipelineBase
from jobs.processors import PROCESSORS
from jobs.settings import settings
from jobs.units import UsageError

_PIPELINE = TypeAdapter(Pipeline)


class DeclarationError(UsageError):
    """A declaration or suite is missing something, or says something the runner cannot do."""


def pipelines_dir() -> Traversable:
    return settings().pipelines_dir or resources.files("jobs") / "pipelines"


def from_mapping(raw: Any, where: str = "declaration") -> PipelineBase:
    """A declaration (already read from YAML) as a checked Pipeline; DeclarationError if it is not one."""
    if not isinstance(raw, dict):
        raise DeclarationError(f"{where}: a declaration is a mapping of settings")
    declared = [key for key in ("window", "process", "join") if raw.get(key) is not None]
    if len(declared) > 1 and "pattern" not in raw:
        raise DeclarationError(f"{where}: declare one of 'window' (aggregates), 'process' (a processor) or 'join'")
    if isinstance(raw.get("name"), str):
        where = f"pipeline '{raw['name']}'"
    try:
        return _PIPELINE.validate_python(raw)
    except ValidationError as error:
        raise DeclarationError(describe(error, where)) from None


def describe(error: ValidationError, where: str) -> str:
    """pydantic's errors as one line each: where, which setting, what is wrong."""
    messages, unknown = [], {}
    for problem in error.errors():
        loc = _readable(problem["loc"])
        place = " ".join([where, *loc[:-1]]) if loc else where
        field = loc[-1] if loc else ""
        kind, message, found = problem["type"], problem["msg"], problem.get("input")
        if kind == "literal_error" and isinstance(found, dict | list):
            continue  # a mapping where a union also takes a word ('infer'): the mapping's own error says more
        if kind == "extra_forbidden":
            unknown.setdefault(place, []).append(field)
        elif kind == "missing":
            messages.append(f"{place}: missing '{field}'")
        elif kind == "literal_error":
            messages.append(f"{place} {field} {found!r} is not one of {problem['ctx']['expected']}")
        elif kind == "union_tag_invalid":
            expected = problem["ctx"]["expected_tags"]
            messages.append(f"{place} {field} {problem['ctx']['tag']!r} is not one of {expected}")
        elif kind in ("value_error", "assertion_error"):
            text = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
            messages.append(f"{' '.join([where, *loc])}: {text}")
        else:
            messages.append(f"{' '.join([where, *loc])}: {message}")
    for place, fields in unknown.items():
        messages.append(f"{place}: unknown setting(s) {sorted(fields)}")
    return "; ".join(messages)


def _readable(loc: tuple) -> list[str]:
    """An error location in words: without the union tags pydantic adds (the pattern first,
    a processor's name after `process`), list positions counted from 1."""
    parts = list(loc[1:] if loc and loc[0] in PATTERNS else loc)
    parts = [p for i, p in enumerate(parts) if not (i and parts[i - 1] == "process" and p in PROCESSORS)]
    parts = [p for p in parts if not (isinstance(p, str) and _PYDANTIC_LABEL.match(p))]
    return [f"#{p + 1}" if isinstance(p, int) else str(p) for p in parts]


# What pydantic puts in an error's location for a union's member or a mapping's key
# ("dict[function-after[_column(), str],literal[...]]", "[key]"): its own words, not the user's.
_PYDANTIC_LABEL = re.compile(r"^(\[key\]|[a-z-]+\[.*\])$")


def load_file(path: Path | Traversable) -> PipelineBase:
    text = path.read_text()
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DeclarationError(f"{path}: not valid YAML: {error}") from None
    pipeline = from_mapping(raw, where=str(path))
    if pipeline.name != path.name.removesuffix(".yaml"):
        raise DeclarationError(
            f"{path}: declares pipeline {pipeline.name!r}; the file must be named {pipeline.name}.yaml"
        )
    pipeline._yaml = text
    return pipeline


def _files(directory: Path | Traversable) -> list[Path | Traversable]:
    return sorted((f for f in directory.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name)


def load_all(directory: Path | Traversable | None = None) -> dict[str, PipelineBase]:
    """Every declared pipeline, by name, in name order; the first declaration that does not
    load is raised (the command line refuses to work from a folder with a broken one)."""
    pipelines = [load_file(f) for f in _files(directory or pipelines_dir())]
    return {pipeline.name: pipeline for pipeline in pipelines}


@dataclass(frozen=True)
class Declarations:
    """Every declaration of a folder, each loaded on its own: one that does not load costs
    only itself (the DAGs are built from the others)."""

    pipelines: dict[str, PipelineBase] = field(default_factory=dict)  # by name, in name order
    broken: dict[str, str] = field(default_factory=dict)  # the file's name without .yaml -> why, in one line


def load_each(directory: Path | Traversable | None = None) -> Declarations:
    """Every declared pipeline that loads, and why each of the others does not."""
    loaded = Declarations()
    for path in _files(directory or pipelines_dir()):
        try:
            pipeline = load_file(path)
        except DeclarationError as error:
            loaded.broken[path.name.removesuffix(".yaml")] = str(error)
        else:
            loaded.pipelines[pipeline.name] = pipeline
    return loaded


def load(name: str, directory: Path | Traversable | None = None) -> PipelineBase:
    directory = directory or pipelines_dir()
    path = directory / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(f.name.removesuffix(".yaml") for f in _files(directory)) or "none"
        raise DeclarationError(f"unknown pipeline {name!r}; declared pipelines: {known}")
    return load_file(path)
