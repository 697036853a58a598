"""Reading declarations: YAML files into checked Pipeline models, and errors a person can act on.

Declarations ship with the package (jobs/pipelines/*.yaml, found as package data);
JOBS_PIPELINES_DIR points at another folder of them.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from functools import reduce
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from jobs.declare import graph
from jobs.declare.parts import OWN
from jobs.declare.pipeline import PATTERNS, Pipeline, PipelineBase
from jobs.declare.problems import did_you_mean
from jobs.processors import PROCESSORS
from jobs.settings import settings
from jobs.units import UsageError

_PIPELINE = TypeAdapter(Pipeline)


class DeclarationError(UsageError):
    """A declaration or suite is missing something, or says something the runner cannot do:
    one line (logs, a DAG's import error), and each problem for a console's line of its own."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]


def pipelines_dir() -> Traversable:
    return settings().pipelines_dir or resources.files("jobs") / "pipelines"


def from_mapping(raw: Any, where: str = "declaration") -> PipelineBase:
    """A declaration (already read from YAML) as a checked Pipeline; DeclarationError if it is
    not one, naming every problem it has."""
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
        problems = describe_each(_every_problem(raw, error), where, Pipeline, raw)
        raise DeclarationError("; ".join(problems), problems) from None


def _every_problem(raw: dict, error: ValidationError) -> list[ErrorDetails]:
    """pydantic's errors, with those its checks across parts would have found: they run only
    once every part is valid on its own, so a misspelt setting or one bad rule would hide
    them. Nothing depends on an unknown setting, or on one item of a list (a rule, a key)
    while others are left, so the declaration without those is checked again."""
    found = [(problem, _item(problem)) for problem in error.errors()]
    refused: dict[tuple, set[int]] = {}
    for _, item in found:
        if item:
            refused.setdefault(item[0], set()).add(item[1])
    trimmed = copy.deepcopy(raw)
    # A list is trimmed only while an item is left: an empty one would be a problem of its own.
    trimmable = {path for path, at in refused.items() if len(at) < len(_list_at(trimmed, path) or ())}
    aside = []
    for problem, item in found:
        if item and item[0] in trimmable:
            aside.append(problem)
        elif not item and _unknown(problem):
            *parents, setting = _parts(problem["loc"])
            reduce(_child, parents, trimmed).pop(setting, None)
            aside.append(problem)
    if not aside:
        return [problem for problem, _ in found]
    for path in trimmable:
        listed = _list_at(trimmed, path)
        listed[:] = [item for at, item in enumerate(listed) if at not in refused[path]]
    try:
        _PIPELINE.validate_python(trimmed)
    except ValidationError as again:
        return aside + again.errors()
    return aside


def _unknown(problem: ErrorDetails) -> bool:
    return problem["type"] == "extra_forbidden"


def _item(problem: ErrorDetails) -> tuple[tuple, int] | None:
    """The list item a problem is in, if any: (the list's path, the item's position)."""
    parts = _parts(problem["loc"])
    at = next((i for i, part in enumerate(parts) if isinstance(part, int)), None)
    return None if at is None else (tuple(parts[:at]), parts[at])


def _list_at(raw: Any, path: tuple) -> list | None:
    found = reduce(_child, path, raw)
    return found if isinstance(found, list) else None


def _child(node: Any, part: str | int) -> Any:
    """What a declaration as written holds at one step of a location; None if nothing."""
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def describe_each(problems: list[ErrorDetails], where: str, declared: Any = None, raw: Any = None) -> list[str]:
    """pydantic's errors as one line each: where, which setting, what is wrong, and the
    setting or value meant when one is spelt like what was written. `declared`: the model
    (or annotation) checked, `raw`: what it checked, for naming settings and list items."""
    messages, unknown = [], {}
    for problem in problems:
        loc = _readable(problem["loc"], raw)
        place = " ".join([where, *loc[:-1]]) if loc else where
        field = loc[-1] if loc else ""
        kind, message, found = problem["type"], problem["msg"], problem.get("input")
        if kind == "literal_error" and isinstance(found, dict | list):
            continue  # a mapping where a union also takes a word ('infer'): the mapping's own error says more
        if kind == "extra_forbidden":
            close = did_you_mean(field, _settings_at(declared, problem["loc"][:-1]))
            unknown.setdefault(place, []).append(f"{field!r}{close}")
        elif kind == "missing":
            messages.append(f"{place}: missing '{field}'")
        elif kind == "literal_error":
            expected = problem["ctx"]["expected"]
            close = did_you_mean(found, _QUOTED.findall(expected))
            messages.append(f"{place} {field} {found!r} is not one of {expected}{close}")
        elif kind == "union_tag_invalid":
            tag, expected = problem["ctx"]["tag"], problem["ctx"]["expected_tags"]
            close = did_you_mean(tag, _QUOTED.findall(expected))
            field = field or "pattern"  # the union a whole declaration is: told apart by its pattern
            messages.append(f"{place} {field} {tag!r} is not one of {expected}{close}")
        elif kind == "model_type":  # `quality: warn` where a block is meant: name what the block takes
            settings = ", ".join(_settings_at(declared, problem["loc"]))
            messages.append(f"{' '.join([where, *loc])}: a block of settings ({settings}), not {found!r}")
        elif kind in ("value_error", "assertion_error"):
            text = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
            messages.append(f"{' '.join([where, *loc])}: {text}")
        else:
            messages.append(f"{' '.join([where, *loc])}: {message}")
    said = [
        f"{place}: unknown setting{'s' if len(settings) > 1 else ''} {', '.join(settings)}"
        for place, settings in unknown.items()
    ]
    return said + messages


_QUOTED = re.compile(r"'([^']*)'")  # the choices in pydantic's "'a', 'b' or 'c'"


def _parts(loc: tuple) -> list[str | int]:
    """An error location as the declaration is written: without the union tags pydantic adds
    (the pattern first, a processor's name after `process`) or its own labels."""
    parts = list(loc[1:] if loc and loc[0] in PATTERNS else loc)
    tags = {*PROCESSORS, OWN}
    parts = [p for i, p in enumerate(parts) if not (i and parts[i - 1] == "process" and p in tags)]
    return [p for p in parts if not (isinstance(p, str) and _PYDANTIC_LABEL.match(p))]


def _readable(loc: tuple, raw: Any = None) -> list[str]:
    """An error location in words: list positions counted from 1, or an item by its name
    (`rules #2` -> `rule 'known_event'`)."""
    words, node = [], raw
    for part in _parts(loc):
        node = _child(node, part)
        if isinstance(part, int) and words and isinstance(node, dict) and isinstance(node.get("name"), str):
            words[-1] = f"{words[-1].removesuffix('s')} {node['name']!r}"
        else:
            words.append(f"#{part + 1}" if isinstance(part, int) else str(part))
    return words


# What pydantic puts in an error's location for a union's member or a mapping's key
# ("dict[function-after[_column(), str],literal[...]]", "[key]"): its own words, not the user's.
_PYDANTIC_LABEL = re.compile(r"\A(\[key\]|[a-z-]+\[.*\])\Z")


def _settings_at(declared: Any, loc: tuple) -> list[str]:
    """The settings of the model at a location pydantic gives (union tags and all), as a
    declaration spells them: for a did-you-mean."""
    models = _models(declared)
    for part in loc:
        # A union's member is named by its tag (a pattern, a processor's name): its literal's value.
        tagged = [m for m in models if part in _tags(m)] if len(models) > 1 else []
        fields = [f for m in models for name, f in m.model_fields.items() if part in (name, f.alias)]
        if tagged:
            models = tagged
        elif fields:
            models = [m for f in fields for m in _models(f.annotation)]
    return [f.alias or name for m in models for name, f in m.model_fields.items()]


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation holds: itself, or those of a union, a tuple, a mapping's values."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for inner in get_args(annotation) for model in _models(inner)]


def _tags(model: type[BaseModel]) -> list[Any]:
    """The values of a model's literal settings: a union's member is told apart by one."""
    return [
        tag
        for f in model.model_fields.values()
        if get_origin(f.annotation) is Literal
        for tag in get_args(f.annotation)
    ]


def read_yaml(text: str, where: str) -> Any:
    """A declaration's or a suite's YAML, without aliases: a few hundred bytes of nested aliases
    stand for billions of nodes (loading one of 686 bytes took 61 s), and DAG files load
    declarations. Anchors and aliases are refused; the text is read in time linear in its size."""
    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
            raise DeclarationError(f"{where}: YAML aliases (*name) are not taken; write the value out")
        twice = _key_given_twice(yaml.compose(text, Loader=yaml.SafeLoader))
        if twice:
            raise DeclarationError(f"{where} line {twice[1]}: {twice[0]!r} is given twice; keep one")
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DeclarationError(f"{where}: not valid YAML: {error}") from None


def _key_given_twice(root: yaml.Node | None) -> tuple[str, int] | None:
    """A key a mapping gives twice, and its line: YAML keeps the last silently (a second
    `output:` made a Parquet pipeline's table Delta)."""
    nodes = [root] if root is not None else []
    while nodes:
        node = nodes.pop()
        if isinstance(node, yaml.SequenceNode):
            nodes += node.value
        elif isinstance(node, yaml.MappingNode):
            seen = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value in seen:
                    return key.value, key.start_mark.line + 1
                seen.add(key.value if isinstance(key, yaml.ScalarNode) else id(key))
                nodes.append(value)
    return None


def load_file(
    path: Path | Traversable, directory: Path | Traversable | None = None, chain: tuple[str, ...] = ()
) -> PipelineBase:
    """The declaration in `path`, with the table it reads, if any, checked among the
    declarations of `directory` (jobs/declare/graph.py); `chain`: the pipelines loading it."""
    text = path.read_text()
    raw = read_yaml(text, str(path))
    if graph.source_table(raw) is not None:
        directory = directory or pipelines_dir()
        declared = [f.name.removesuffix(".yaml") for f in _files(directory)]

        def upstream(name: str, readers: tuple[str, ...]) -> PipelineBase:
            return load_file(directory / f"{name}.yaml", directory, readers)

        try:
            raw = graph.with_upstream(raw, chain, declared, upstream)
        except graph.GraphError as error:
            if chain:  # a cycle or a missing table further up: said once, by the first to load
                raise
            where = f"pipeline {raw['name']!r}" if isinstance(raw.get("name"), str) else str(path)
            raise DeclarationError(f"{where}: {error}") from None
    pipeline = from_mapping(raw, where=str(path))
    if pipeline.name != path.name.removesuffix(".yaml"):
        raise DeclarationError(
            f"{path}: declares pipeline {pipeline.name!r}; the file must be named {pipeline.name}.yaml"
        )
    pipeline._yaml = text
    return pipeline


def _files(directory: Path | Traversable) -> list[Path | Traversable]:
    if not directory.is_dir():
        raise DeclarationError(f"{directory} is not a folder of declarations (the folder JOBS_PIPELINES_DIR names)")
    return sorted((f for f in directory.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name)


def _misnamed(directory: Path | Traversable) -> dict[str, str]:
    """Files that look like declarations but are not read (only `<name>.yaml` is), each with
    its problem, rather than a pipeline silently missing."""
    found = sorted(directory.iterdir(), key=lambda f: f.name)
    return {
        f.name: f"{f.name}: a declaration is read only from a .yaml file; rename it {f.name.rsplit('.', 1)[0]}.yaml"
        for f in found
        if f.is_file() and f.name.lower().endswith((".yml", ".yaml")) and not f.name.endswith(".yaml")
    }


def load_all(directory: Path | Traversable | None = None) -> dict[str, PipelineBase]:
    """Every declared pipeline, by name, in name order; DeclarationError naming every
    declaration that does not load (the command line refuses to work from a folder with a
    broken one)."""
    loaded = load_each(directory)
    if loaded.broken:
        raise DeclarationError("; ".join(loaded.broken.values()), loaded.problems)
    return loaded.pipelines


@dataclass(frozen=True)
class Declarations:
    """Every declaration of a folder, each loaded on its own: one that does not load costs
    only itself (the DAGs are built from the others)."""

    pipelines: dict[str, PipelineBase] = field(default_factory=dict)  # by name, in name order
    broken: dict[str, str] = field(default_factory=dict)  # the file's name without .yaml -> why, in one line
    problems: list[str] = field(default_factory=list)  # every problem of the broken ones, one line each


def load_each(directory: Path | Traversable | None = None) -> Declarations:
    """Every declared pipeline that loads, and why each of the others does not."""
    loaded = Declarations()
    directory = directory or pipelines_dir()
    for path in _files(directory):
        try:
            pipeline = load_file(path, directory)
        except DeclarationError as error:
            loaded.broken[path.name.removesuffix(".yaml")] = str(error)
            loaded.problems.extend(error.problems)
        else:
            loaded.pipelines[pipeline.name] = pipeline
    misnamed = _misnamed(directory)
    loaded.broken.update(misnamed)
    loaded.problems.extend(misnamed.values())
    return loaded


def load(name: str, directory: Path | Traversable | None = None) -> PipelineBase:
    directory = directory or pipelines_dir()
    path = directory / f"{name}.yaml"
    if not path.is_file():
        known = [f.name.removesuffix(".yaml") for f in _files(directory)]
        raise DeclarationError(
            f"unknown pipeline {name!r}{did_you_mean(name, known)}; declared pipelines: {', '.join(known) or 'none'}"
        )
    return load_file(path, directory)
