"""Which build of a pipeline is in use: the layout's locations (`Locations.resolve`, no
I/O), or, once a rebuild switched (jobs/change/rebuild.py), the build's own checkpoint,
table, quarantine and run reports, as `<root>/builds/<pipeline>/_CURRENT.json` names them.

What runs, validates, reports or reads a pipeline resolves it here (the command line, the
Airflow tasks at run time, the data quality report); what must not touch storage (a DAG
file being parsed) uses `Locations.resolve`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jobs.lake import fs
from jobs.lake.layout import CURRENT_BUILD, Locations, join, normalize

BUILT = ("checkpoint", "output", "quarantine", "runs")  # what a build has of its own


def pointer(root: str, pipeline_name: str) -> str:
    """Where the build in use is named, once a rebuild switched."""
    return join(normalize(root), "builds", pipeline_name, CURRENT_BUILD)


def current_build(root: str, pipeline_name: str) -> dict[str, Any] | None:
    """The build a rebuild switched the pipeline to (its locations, when, why), if one did."""
    return fs.read_json_if_there(pointer(root, pipeline_name))


def in_use(pipeline_name: str, root: str, **given: str | None) -> Locations:
    """The pipeline's locations under `root` as runs use them: the build in use's, except
    those given (`Locations.resolve`'s keywords)."""
    layout = Locations.resolve(pipeline_name, root=root, **given)
    build = current_build(root, pipeline_name)
    if build is None:
        return layout
    return replace(layout, **{k: build[k] for k in BUILT if not given.get(k)})
