"""Groups: pipelines Airflow runs together, in one Spark application per DAG run.

A pipeline joins a group by declaring `group: <name>`, or, with JOBS_GROUP_BY_SCHEDULE
set, by its schedule alone (`@hourly` -> the group `hourly`; a pipeline on arrival joins
a group only by declaring it). A group runs on its members' one schedule as the DAG
jobs_group_<name> (on arrival: when any member's landing has new files, every member
runs); each member keeps a DAG of its own, run by hand only (a one-off run, a file to
quarantine).

What a group runs with is decided here, once, for the command line and the group DAG
alike: its application's Spark settings (each member's, the largest memory of each kind)
and its Airflow retries and timeout (the largest any member declares).
"""

from __future__ import annotations

import re

from jobs.declare.load import DeclarationError
from jobs.declare.operations import Orchestration
from jobs.declare.pipeline import PipelineBase
from jobs.settings import settings
from jobs.units import ON_ARRIVAL, ON_UPSTREAM, parse_size


def schedule_group(schedule: str) -> str:
    """'@hourly' -> 'hourly'; a cron expression -> 'cron_' and its numbers ('*/15 * * * *' -> 'cron_15')."""
    if schedule.startswith("@"):
        return schedule[1:]
    return "cron_" + (re.sub(r"[^0-9A-Za-z]+", "_", schedule).strip("_") or "any")


def group_of(pipeline: PipelineBase) -> str | None:
    if pipeline.group:
        return pipeline.group
    if settings().group_by_schedule and pipeline.schedule and pipeline.schedule not in (ON_ARRIVAL, ON_UPSTREAM):
        return schedule_group(pipeline.schedule)
    return None


def groups(pipelines: dict[str, PipelineBase]) -> dict[str, list[PipelineBase]]:
    """Each group's members, in name order; DeclarationError for a group whose members do
    not share one schedule."""
    found, refused = each_group(pipelines)
    if refused:
        raise DeclarationError("; ".join(refused.values()))
    return found


def each_group(pipelines: dict[str, PipelineBase]) -> tuple[dict[str, list[PipelineBase]], dict[str, str]]:
    """The groups that hold (each one's members, in name order), and why each other does
    not: its members must share one schedule. A group refused costs only itself."""
    found: dict[str, list[PipelineBase]] = {}
    for pipeline in pipelines.values():
        name = group_of(pipeline)
        if name is not None:
            found.setdefault(name, []).append(pipeline)
    refused = {}
    for name, members in list(found.items()):
        if len({m.schedule for m in members}) > 1:
            each = ", ".join(f"{m.name} {m.schedule or 'none'}" for m in members)
            refused[name] = f"group {name!r}: its pipelines must share one schedule, not: {each}"
            del found[name]
    return found, refused


def own_schedule(pipeline: PipelineBase) -> str | None:
    """When the pipeline's own DAG runs: never on a schedule when its group's DAG runs it."""
    return None if group_of(pipeline) else pipeline.schedule


def group_spark_conf(members: list[PipelineBase]) -> dict[str, str]:
    """The settings of the members' one application: each declaration's `spark:` block,
    the largest of each memory (driver, executor). Each member's SQL settings are set on
    its own session too, before its query starts (jobs/run/preflight.py)."""
    conf: dict[str, str] = {}
    for member in members:
        for key, value in member.spark_settings.session_conf().items():
            kept = key.endswith(".memory") and key in conf and parse_size(conf[key]) >= parse_size(value)
            conf[key] = conf[key] if kept else value
    return conf


def group_orchestration(members: list[PipelineBase]) -> Orchestration:
    """How Airflow runs the group's DAG: the most retries, the longest delays, the longest
    timeout and deadline any member declares, so that each member gets at least its own."""
    declared = [member.orchestration for member in members]
    deadlines = [o.deadline_s for o in declared if o.deadline_s]
    return Orchestration.model_validate(
        {
            "retries": max(o.retries for o in declared),
            "retry_delay": f"{max(o.retry_delay_s for o in declared)} seconds",
            "max_retry_delay": f"{max(o.max_retry_delay_s for o in declared)} seconds",
            "timeout": f"{max(o.timeout_s for o in declared)} seconds",
            "deadline": f"{max(deadlines)} seconds" if deadlines else None,
        }
    )
