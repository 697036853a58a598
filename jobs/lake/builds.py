"""Which build of a pipeline is in use: the layout's locations (`Locations.resolve`, no
I/O), or, once a rebuild switched (jobs/change/rebuild.py), the build's own checkpoint,
table, quarantine and run reports, as `<root>/builds/<pipeline>/_CURRENT.json` names it
(jobs/lake/pointer.py).

What runs, validates, reports or reads a pipeline resolves it here (the command line, the
Airflow tasks at run time, the data quality report); what must not touch storage (a DAG
file being parsed) uses `Locations.resolve`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jobs.lake import pointer
from jobs.lake.layout import Locations, join, normalize
from jobs.lake.pointer import Pointer

BUILT = ("checkpoint", "output", "quarantine", "runs")  # what a build has of its own


def builds_folder(root: str, pipeline_name: str) -> str:
    """Where a pipeline's builds are, and the pointer naming the one in use (once a rebuild switched)."""
    return join(normalize(root), "builds", pipeline_name)


def current_build(root: str, pipeline_name: str) -> Pointer | None:
    """The build a rebuild switched the pipeline to (its locations, when, why), if one did."""
    return pointer.read(builds_folder(root, pipeline_name))


def build_pointer(build_id: str, locations: Locations, at: str, **about: Any) -> Pointer:
    """A pointer to a build: its table is what readers read; its own locations are said too."""
    own = {k: getattr(locations, k) for k in BUILT if k != "output"}
    return Pointer(build_id, locations.output, at, own | about)


def built_locations(build: Pointer) -> dict[str, str]:
    """A build's own locations, as its pointer names them."""
    return {k: build.path if k == "output" else build.about[k] for k in BUILT}


def in_use(pipeline_name: str, root: str, reads: str | None = None, **given: str | None) -> Locations:
    """The pipeline's locations under `root` as runs use them: the build in use's, except
    those given (`Locations.resolve`'s keywords). `reads`: the pipeline whose table its
    source reads (`source: {table: ...}`), in use under the same root, is its landing."""
    if reads is not None and not given.get("landing"):
        given = {**given, "landing": in_use(reads, root).output}
    layout = Locations.resolve(pipeline_name, root=root, **given)
    build = current_build(root, pipeline_name)
    if build is None:
        return layout
    return replace(layout, **{k: v for k, v in built_locations(build).items() if not given.get(k)})
