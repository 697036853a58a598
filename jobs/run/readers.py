"""Which pipelines read a landing: one, unless each of them declares it shared.

Each pipeline's runs retire what they have read of its landing (retention deletes or archives
it): a second pipeline reading the same landing would lose files it has not read yet. Each
incremental run says which landing it reads (`<root>/readers/<pipeline>.json`, written under
the pipeline's lock, by it alone) and is refused at preflight when another pipeline of the root
reads an overlapping landing, unless both declare `source: {shared: true}`; retention of a
shared landing then waits for every reader (`taken_by_every_reader`).
"""

from __future__ import annotations

from jobs.accounting.checkpoint import CheckpointLog
from jobs.declare import PipelineBase
from jobs.lake import fs
from jobs.lake.layout import Locations, StorageError, is_inside, join


def other_readers(pipeline_name: str, locations: Locations) -> list[dict]:
    """What the root's other pipelines say of the landing they read, for those whose landing
    holds this one's or lies inside it."""
    if not locations.readers:
        return []  # a request made before readers were recorded
    found = []
    for name in fs.list_names(locations.readers):
        said = fs.read_json_if_there(join(locations.readers, name))
        if not isinstance(said, dict) or said.get("pipeline") == pipeline_name:
            continue
        landing = str(said.get("landing", ""))
        if is_inside(landing, locations.landing) or is_inside(locations.landing, landing):
            found.append(said)
    return found


def check_and_record(pipeline: PipelineBase, locations: Locations) -> None:
    """Refuse a second reader of a landing that is not shared by both; then say this one reads it."""
    shared = pipeline.source.shared
    for other in other_readers(pipeline.name, locations):
        if not (shared and other.get("shared")):
            raise StorageError(
                f"landing {locations.landing} is read by pipeline {other.get('pipeline')!r} too "
                f"({join(locations.readers, str(other.get('pipeline')) + '.json')}): each applies its own retention, "
                "and one would remove files the other has not read; give each pipeline its own landing, or declare "
                "`source: {shared: true}` in both (retention then waits for every reader)"
            )
    record = {"pipeline": pipeline.name, "landing": locations.landing, "checkpoint": locations.checkpoint}
    record |= {"output": locations.output, "shared": shared}
    if fs.read_json_if_there(join(locations.readers, f"{pipeline.name}.json")) != record:
        fs.write_json(join(locations.readers, f"{pipeline.name}.json"), record)


def taken_by_every_reader(pipeline: PipelineBase, locations: Locations) -> set[str] | None:
    """The landed files every other reader of a shared landing has read in a committed batch;
    None when no other pipeline reads it (nothing to wait for)."""
    others = other_readers(pipeline.name, locations) if pipeline.source.shared else []
    if not others:
        return None
    taken: set[str] | None = None
    for other in others:
        log = CheckpointLog(str(other["checkpoint"]), str(other.get("output", "")))
        in_flight = log.batch_in_flight()
        read = set(log.recorded_files(0)) - (set(log.source_files(in_flight, 0)) if in_flight is not None else set())
        taken = read if taken is None else taken & read
    return taken or set()
