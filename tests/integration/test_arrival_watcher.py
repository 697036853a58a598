"""The watcher of a landing (jobs/orchestration/arrival_watcher.py), run here as the triggerer runs
it: one event per burst of files once they are quiet, naming them; nothing while what
it said is not taken yet; the next arrival after a run is news again; a listing that
fails is tried again at the next. Real files, a real run taking them in between."""

from __future__ import annotations

import asyncio
import time

from jobs.lake.layout import Locations
from jobs.orchestration.arrival_watcher import LandingArrivals
from tests.helpers import event, land, run_pipeline

QUIET_S = 2


def lines(name: str) -> dict[str, list[str]]:
    return {f"{name}.json": [event("u1", "2023-07-30T10:00:00Z", name)]}


def test_one_event_per_quiet_burst_and_none_until_a_run_takes_it(spark, clickstream, tmp_path):
    root = str(tmp_path / "root")
    locations = Locations.resolve("clickstream", root=root)
    land(locations.landing, lines("first"))

    async def watch() -> list[tuple[float, dict]]:
        started, heard, events = time.monotonic(), [], asyncio.Queue()

        async def listen() -> None:  # as the triggerer does: the generator runs on, events go out
            async for found in LandingArrivals("clickstream", root, QUIET_S, 1).run():
                await events.put(found.payload)

        listening = asyncio.ensure_future(listen())

        async def next_event(within_s: float) -> dict | None:
            try:
                payload = await asyncio.wait_for(events.get(), within_s)
            except TimeoutError:
                return None
            heard.append((time.monotonic() - started, payload))
            return payload

        first = await next_event(15)
        assert first is not None and first["named"] == ["first.json"] and first["files"] == 1
        assert first["heard_by"] == "listing"  # no queue: the listing is all there is
        assert await next_event(3 * QUIET_S) is None  # said, not taken yet: not said again
        for number in range(3):  # a burst, closer together than the quiet period
            land(locations.landing, lines(f"burst-{number}"))
            await asyncio.sleep(0.5)
        burst = await next_event(15)
        assert burst is not None and burst["named"] == ["burst-0.json", "burst-1.json", "burst-2.json", "first.json"]
        await asyncio.to_thread(run_pipeline, spark, clickstream, locations)  # takes all four
        assert await next_event(3 * QUIET_S) is None
        land(locations.landing, lines("later"))
        later = await next_event(15)
        assert later is not None and later["named"] == ["later.json"]
        listening.cancel()
        return heard

    heard = asyncio.run(watch())
    assert [payload["files"] for _, payload in heard] == [1, 4, 1]
    assert heard[0][0] >= QUIET_S  # nothing said before the landing was quiet that long


def test_a_landing_made_after_the_watcher_started_is_heard(tmp_path):
    root = str(tmp_path / "root")
    landing = Locations.resolve("clickstream", root=root).landing  # not there yet: nothing new

    async def watch() -> dict:
        watcher = LandingArrivals("clickstream", root, 1, 1).run()
        waiting = asyncio.ensure_future(anext(watcher))
        await asyncio.sleep(2.5)
        assert not waiting.done()
        land(landing, lines("first"))
        found = await asyncio.wait_for(waiting, 15)
        await watcher.aclose()
        return found.payload

    assert asyncio.run(watch())["named"] == ["first.json"]


def test_a_bucket_s_notifications_start_it_and_the_listing_catches_a_lost_one(s3_root):
    """S3 (moto) notifying an SQS queue of each object created: the watcher looks when told,
    long before its listing is due; a notification lost (none was sent) is caught by the
    listing; one repeated says nothing new."""
    import json

    from infra.s3 import notifications
    from jobs.lake import s3
    from jobs.lake.layout import split_bucket

    landing = Locations.resolve("clickstream", root=s3_root).landing
    bucket, prefix = split_bucket(landing)
    queue = s3.sqs_client()
    queue_url = notifications.queue(f"landing-{prefix.replace('/', '-')[-60:]}")

    listing_every_s = 16  # told: within the quiet period and a second or two

    async def watch() -> None:
        events: asyncio.Queue = asyncio.Queue()

        async def listen() -> None:
            async for found in LandingArrivals("clickstream", s3_root, QUIET_S, listing_every_s, queue_url).run():
                await events.put((time.monotonic(), found.payload))

        listening = asyncio.ensure_future(listen())
        await asyncio.sleep(2)  # its first listing: nothing
        notifications.notify(landing, queue_url)
        landed = time.monotonic()
        land(landing, lines("first"))
        told, first = await asyncio.wait_for(events.get(), 20)
        assert first["named"] == ["first.json"] and told - landed < listing_every_s / 2  # told, not listed
        assert first["heard_by"] == "notification"

        duplicate = {
            "Records": [
                {
                    "eventName": "ObjectCreated:Put",
                    "s3": {"bucket": {"name": bucket}, "object": {"key": f"{prefix}/first.json"}},
                }
            ]
        }
        queue.send_message(QueueUrl=queue_url, MessageBody=json.dumps(duplicate))
        await asyncio.sleep(QUIET_S + 2)  # heard, and listed after it: nothing new, no event
        assert events.empty()
        notifications.stop(landing)  # from here on, notifications are lost
        land(landing, lines("unnotified"))
        _, second = await asyncio.wait_for(events.get(), listing_every_s + 2 * QUIET_S + 10)
        assert second["named"] == ["first.json", "unnotified.json"]  # nothing taken them yet
        assert second["heard_by"] == "listing"
        assert events.empty()
        listening.cancel()

    asyncio.run(watch())


def test_a_run_that_died_mid_batch_is_news_once_its_lock_is_free(spark, clickstream, tmp_path):
    """Before, the watcher heard nothing until `at_least_every` after a run died with a batch
    planned and not committed (only Spark can redo it, so the listing could not tell)."""
    from pathlib import Path

    from jobs.accounting.checkpoint import CheckpointLog
    from jobs.lake.locks import CheckpointLock
    from jobs.run.arrivals import UNKNOWN, new_files

    root = str(tmp_path / "root")
    locations = Locations.resolve("clickstream", root=root)
    land(locations.landing, lines("first"))
    run_pipeline(spark, clickstream, locations)
    assert new_files(clickstream, root) is None
    last = CheckpointLog.of(locations).committed_batches()[-1]
    (Path(locations.checkpoint) / "commits" / str(last)).unlink()  # as a run killed before the commit leaves it

    with CheckpointLock(locations.ledger, clickstream.name):  # a run is redoing it: no answer yet
        assert new_files(clickstream, root) is UNKNOWN
    unfinished = new_files(clickstream, root)
    assert unfinished == {
        "pipeline": "clickstream",
        "files": 0,
        "bytes": 0,
        "named": [],
        "unfinished": f"batch {last} was planned and not committed: it is redone",
    }
