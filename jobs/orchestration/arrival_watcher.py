"""The on-arrival watcher, as Airflow's triggerer runs it: the loop that lists the landing
(and waits on the bucket's queue), around the pure step that decides what is news
(jobs/run/arrivals.py). The DAG's schedule that names it is arrival.py's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from jobs.declare import PipelineBase
from jobs.lake.layout import Locations, is_inside
from jobs.run.arrivals import UNKNOWN, Cursor, Listing, Watch, describe, new_files


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
        from jobs import declare

        pipeline = await asyncio.to_thread(declare.load, self.pipeline_name)  # once, not at every listing
        watch, cursor = Watch(self.quiet_period_s, self.listing_every_s), Cursor(look_at=time.monotonic())
        while True:
            if time.monotonic() >= cursor.look_at:
                event, cursor = watch.step(await self._listed(pipeline), cursor, time.monotonic())
                if event is not None:
                    self.log.info("%s: %s", self.pipeline_name, describe(event))
                    yield TriggerEvent(event)
            if await self._notified(cursor.look_at - time.monotonic()):
                cursor = watch.notified(cursor, time.monotonic())

    async def _listed(self, pipeline: PipelineBase) -> Listing:
        try:
            return await asyncio.to_thread(new_files, pipeline, self.root)
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
