"""Run on arrival: a pipeline declared `schedule: on_arrival` runs when files land.

Its DAG is scheduled on the pipeline's landing as an Airflow Asset, or every
`at_least_every`, whichever comes first. An `AssetWatcher` runs `LandingArrivals` in
Airflow's triggerer: it lists the landing against the checkpoint (the `pending` step a
run starts with, jobs/run/pending.py: no Spark, well under a second), and once files
have landed and nothing has changed for `quiet_period`, it updates the Asset, naming the
files; the scheduler then starts the DAG. A run reads whatever its checkpoint has not
taken, whatever the event said, so an event lost or repeated changes latency only;
events that come while a run goes on make one more run after it (`max_active_runs=1`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from airflow.sdk import Asset, AssetAny, AssetOrTimeSchedule, AssetWatcher, DeltaTriggerTimetable
from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from jobs.declare import PipelineBase
from jobs.declare.groups import own_schedule
from jobs.lake.layout import Locations, is_inside
from jobs.orchestration.reports import location_asset
from jobs.units import ON_ARRIVAL

NAMED = 20  # an event names this many files at most (and counts them all)


def schedule(pipeline: PipelineBase, root: str) -> str | AssetOrTimeSchedule | None:
    """The DAG's schedule: the declared one, or for `on_arrival` the landing's Asset (its
    watcher) or `at_least_every`, whichever comes first."""
    own = own_schedule(pipeline)
    return members_schedule([pipeline], root) if own == ON_ARRIVAL else own


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


class LandingArrivals(BaseEventTrigger):
    """New files in a pipeline's landing, once none has come for `quiet_period_s`.

    It lists the landing every `listing_every_s`. With `queue` (an SQS queue the landing's
    bucket notifies of each object created), it waits on the queue in between, and lists
    `quiet_period_s` after the last notification for the landing: the listing says what is
    new (a notification only says when to look), and the periodic listing catches what a
    lost notification did not say. An event says which heard the latest change
    (`heard_by`: notification or listing): notifications that never tell show there."""

    def __init__(
        self, pipeline_name: str, root: str, quiet_period_s: int, listing_every_s: int, queue: str | None = None
    ) -> None:
        super().__init__()
        self.pipeline_name = pipeline_name
        self.root = root
        self.quiet_period_s = quiet_period_s
        self.listing_every_s = listing_every_s
        self.queue = queue

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "pipeline_name": self.pipeline_name,
                "root": self.root,
                "quiet_period_s": self.quiet_period_s,
                "listing_every_s": self.listing_every_s,
                "queue": self.queue,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        said = None  # what the last event said: the same again waits for a run to take it
        heard, since, heard_by = None, time.monotonic(), "listing"
        next_listing, notified = time.monotonic(), None  # notified: when the queue last told of a file
        while True:
            if time.monotonic() >= next_listing:
                now_new = await self._listed()
                now = time.monotonic()
                next_listing = now + self.listing_every_s
                if now_new is UNKNOWN:  # a run is under way (or one stopped mid-batch, which its retry redoes)
                    continue
                if now_new != heard:  # quiet since the last notification, or from now
                    heard, since = now_new, notified or now
                    heard_by = "notification" if notified else "listing"
                notified = None
                if heard is None:
                    said = None  # every file taken: the next arrival is news
                elif heard != said and now - since >= self.quiet_period_s:
                    said = heard
                    self.log.info("%s: %s", self.pipeline_name, describe({**heard, "heard_by": heard_by}))
                    yield TriggerEvent({**heard, "heard_by": heard_by})
                elif heard != said:  # landed, not quiet yet: look again once it may be
                    next_listing = min(next_listing, since + self.quiet_period_s)
            if await self._notified(next_listing - time.monotonic()):
                notified = time.monotonic()
                next_listing = notified + self.quiet_period_s  # unless more is notified meanwhile

    async def _listed(self) -> dict[str, Any] | None:
        try:
            return await asyncio.to_thread(new_files, self.pipeline_name, self.root)
        except Exception as error:  # noqa: BLE001 - a storage hiccup: the next listing tries again
            self.log.warning("%s: listing the landing failed (%s); trying again", self.pipeline_name, error)
            return UNKNOWN

    async def _notified(self, wait_s: float) -> bool:
        """Whether the queue said an object was created in the landing within `wait_s` (without
        a queue: waits, and says no)."""
        if not self.queue:
            await asyncio.sleep(max(wait_s, 0))
            return False
        from jobs.lake import s3

        landing = Locations.resolve(self.pipeline_name, root=self.root).landing
        try:  # SQS waits 20 s at most
            created = await asyncio.to_thread(s3.created_objects, self.queue, int(min(max(wait_s, 0), 20)), landing)
        except Exception as error:  # noqa: BLE001 - the periodic listing goes on without the queue
            self.log.warning("%s: reading queue %s failed (%s)", self.pipeline_name, self.queue, error)
            await asyncio.sleep(max(min(wait_s, 20), 0))
            return False
        return any(is_inside(uri, landing) for uri in created)


UNKNOWN: dict[str, Any] = {}  # what the checkpoint's logs cannot tell while a batch is under way


def new_files(pipeline_name: str, root: str) -> dict[str, Any] | None:
    """What a run would take now (None: nothing; UNKNOWN: a batch is under way), as an event says it."""
    from jobs import declare
    from jobs.lake.builds import in_use
    from jobs.run.context import RunOptions
    from jobs.run.pending import pending_input

    locations = in_use(pipeline_name, root)
    pending = pending_input(declare.load(pipeline_name), locations, RunOptions())
    if pending.nothing_new:
        return None
    if pending.needs_spark:
        return UNKNOWN
    named = [uri.removeprefix(locations.landing).lstrip("/") for files in pending.named or () for uri in files]
    return {
        "pipeline": pipeline_name,
        "files": pending.files,
        "bytes": pending.bytes,
        "named": sorted(named)[:NAMED],
    }


def describe(event: dict[str, Any]) -> str:
    named = ", ".join(event["named"]) + (" ..." if event["files"] > len(event["named"]) else "")
    told = " (told by the bucket's notification)" if event.get("heard_by") == "notification" else ""
    return f"{event['files']} new file(s), {event['bytes']:,} bytes{told}: {named}"


def log_arrivals(context: Any, log: Any) -> None:
    """In a run the landing's Asset started: what each event said (the files may be more by now)."""
    for events in (context.get("triggering_asset_events") or {}).values():
        for event in events:
            payload = (event.extra or {}).get("payload")
            if isinstance(payload, dict) and "files" in payload:
                log.info("started by files landing at %s: %s", event.timestamp, describe(payload))
