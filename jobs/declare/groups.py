"""Groups: pipelines Airflow runs together, in one Spark application per DAG run.

A pipeline joins a group by declaring `group: <name>`, or, with JOBS_GROUP_BY_SCHEDULE
set, by its schedule alone (`@hourly` -> the group `hourly`). A group runs on its members'
one schedule as the DAG jobs_group_<name>; each member keeps a DAG of its own, run by
hand only (a one-off run, a file to quarantine).
"""

from __future__ import annotations

import re

from jobs.declare.load import DeclarationError
from jobs.declare.pipeline import PipelineBase
from jobs.settings import settings


def schedule_group(schedule: str) -> str:
    """'@hourly' -> 'hourly'; a cron expression -> 'cron_' and its numbers ('*/15 * * * *' -> 'cron_15')."""
    if schedule.startswith("@"):
        return schedule[1:]
    return "cron_" + (re.sub(r"[^0-9A-Za-z]+", "_", schedule).strip("_") or "any")


def group_of(pipeline: PipelineBase) -> str | None:
    if pipeline.group:
        return pipeline.group
    if settings().group_by_schedule and pipeline.schedule:
        return schedule_group(pipeline.schedule)
    return None


def groups(pipelines: dict[str, PipelineBase]) -> dict[str, list[PipelineBase]]:
    """Each group's members, in name order; a group's members must share one schedule."""
    found: dict[str, list[PipelineBase]] = {}
    for pipeline in pipelines.values():
        name = group_of(pipeline)
        if name is not None:
            found.setdefault(name, []).append(pipeline)
    for name, members in found.items():
        schedules = {m.schedule for m in members}
        if len(schedules) > 1:
            each = ", ".join(f"{m.name} {m.schedule or 'none'}" for m in members)
            raise DeclarationError(f"group {name!r}: its pipelines must share one schedule, not: {each}")
    return found


def own_schedule(pipeline: PipelineBase) -> str | None:
    """When the pipeline's own DAG runs: never on a schedule when its group's DAG runs it."""
    return None if group_of(pipeline) else pipeline.schedule
