"""Run on arrival: a pipeline declared `schedule: on_arrival` runs when files land. Here,
what the DAG processor builds: the DAG's schedule.

Its DAG is scheduled on the pipeline's landing as an Airflow Asset, or every
`at_least_every`, whichever comes first. An `AssetWatcher` runs `LandingArrivals`
(arrival_watcher.py) in Airflow's triggerer: it lists the landing against the checkpoint
(the `pending` step a run starts with: no Spark, well under a second), and once files have
landed and nothing has changed for `quiet_period`, it updates the Asset, naming the files
(what to say, and when: jobs/run/arrivals.py); the scheduler then starts the DAG. A run
reads whatever its checkpoint has not taken, whatever the event said, so an event lost or
repeated changes latency only; events that come while a run goes on make one more run
after it (`max_active_runs=1`). The run's task logs which files started it (operators.py).
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Asset, AssetAny, AssetOrTimeSchedule, AssetWatcher, DeltaTriggerTimetable

from jobs.declare import PipelineBase
from jobs.declare.groups import own_schedule
from jobs.lake.layout import Locations
from jobs.orchestration.arrival_watcher import LandingArrivals
from jobs.orchestration.reports import location_asset, table_asset
from jobs.units import ON_ARRIVAL, ON_UPSTREAM


def schedule(pipeline: PipelineBase, root: str) -> str | AssetOrTimeSchedule | AssetAny | None:
    """The DAG's schedule: the declared one, or for `on_arrival` the landing's Asset (its
    watcher) or `at_least_every`, whichever comes first, or for `on_upstream` the Asset of
    the table it reads (its events: a run that appended rows, jobs/orchestration/reports.py)."""
    own = own_schedule(pipeline)
    if own == ON_UPSTREAM:
        return upstream_schedule([pipeline], root)
    return members_schedule([pipeline], root) if own == ON_ARRIVAL else own


def upstream_schedule(members: list[PipelineBase], root: str) -> AssetAny:
    """When any member's upstream table gets rows: a group's DAG, or one pipeline's."""
    return AssetAny(*(table_asset(name, root) for name in dict.fromkeys(m.source.table for m in members)))


def members_schedule(members: list[PipelineBase], root: str) -> AssetOrTimeSchedule:
    """On arrival at any member's landing (each watched as its own declaration says), or
    every shortest `at_least_every` of theirs: a group's DAG, or one pipeline's."""
    landings = [
        landing_asset(
            member.name, root, [AssetWatcher(name=f"jobs_{member.name}_arrivals", trigger=watcher(member, root))]
        )
        for member in members
    ]
    return AssetOrTimeSchedule(
        timetable=DeltaTriggerTimetable(timedelta(seconds=min(m.on_arrival.at_least_every_s for m in members))),
        assets=AssetAny(*landings),
    )


def watcher(pipeline: PipelineBase, root: str) -> LandingArrivals:
    arrival = pipeline.on_arrival
    return LandingArrivals(pipeline.name, root, arrival.quiet_period_s, arrival.listing_every_s, arrival.queue)


def landing_asset(pipeline_name: str, root: str, watchers: list[AssetWatcher] | None = None) -> Asset:
    landed = location_asset(Locations.resolve(pipeline_name, root=root).landing, pipeline_name)
    return Asset(uri=landed.uri, group=landed.group, extra={**landed.extra, "landing": True}, watchers=watchers or [])
