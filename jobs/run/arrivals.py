"""Arrivals in a landing, as news: what the on-arrival watcher (jobs/orchestration/arrival_watcher.py,
in Airflow's triggerer) decides, without Airflow, a clock or a loop.

    listing   what a run would take now (`new_files`: the `pending` step, no Spark), None
              when nothing is new, UNKNOWN while a run of the pipeline holds its lock (or the listing failed)
    step      (listing, cursor, now) -> (event or None, cursor): an event once files have
              landed and the listing has not changed for `quiet_period_s`, naming them; not
              the same again until a run takes them

A run that died mid-batch leaves a batch no listing can see past (only Spark redoes it): with
the pipeline's lock free, that is news too, so the next run comes at once rather than at
`at_least_every`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from jobs.declare import PipelineBase

NAMED = 20  # an event names this many files at most (and counts them all)
UNKNOWN: dict[str, Any] = {"unknown": True}  # no answer: a run's batch under way, or the listing failed

Listing = dict[str, Any] | None


@dataclass(frozen=True)
class Cursor:
    """What the watcher knows between two looks (monotonic seconds)."""

    look_at: float = 0.0  # when to list next
    heard: Listing = None  # what the latest listing found new
    since: float = 0.0  # when that changed (or the notification that told of it came)
    heard_by: str = "listing"  # which heard the change: listing or notification
    said: Listing = None  # what the last event said: said again only once a run took it
    notified: float | None = None  # when the queue last told of a file, since the last listing


@dataclass(frozen=True)
class Watch:
    quiet_period_s: float
    listing_every_s: float

    def step(self, listing: Listing, cursor: Cursor, now: float) -> tuple[dict[str, Any] | None, Cursor]:
        """A listing's news: an event to send (or None) and the cursor after it."""
        look_at = now + self.listing_every_s
        if listing is UNKNOWN:
            return None, replace(cursor, look_at=look_at)
        heard, since, heard_by = cursor.heard, cursor.since, cursor.heard_by
        if listing != heard:  # quiet since the last notification, or from now
            heard, since = listing, cursor.notified or now
            heard_by = "notification" if cursor.notified else "listing"
        said, event = cursor.said, None
        if heard is None:
            said = None  # every file taken: the next arrival is news
        elif heard != said and now - since >= self.quiet_period_s:
            said, event = heard, {**heard, "heard_by": heard_by}
        elif heard != said:  # landed, not quiet yet: look again once it may be
            look_at = min(look_at, since + self.quiet_period_s)
        return event, Cursor(look_at, heard, since, heard_by, said, notified=None)

    def notified(self, cursor: Cursor, now: float) -> Cursor:
        """The bucket told of a file in the landing: list once it has been quiet since."""
        return replace(cursor, notified=now, look_at=now + self.quiet_period_s)


def new_files(pipeline: PipelineBase, root: str) -> Listing:
    """What a run would take now, as an event says it: None when nothing is new, UNKNOWN while a
    run holds the pipeline's lock and Spark's logs cannot tell yet."""
    from jobs.lake.builds import in_use
    from jobs.lake.locks import holder
    from jobs.request import RunRequest
    from jobs.run.pending import pending_input

    locations = in_use(pipeline.name, root, pipeline.source.table)
    pending = pending_input(pipeline, RunRequest(pipeline.name, locations))  # what a run of it would read
    if pending.nothing_new:
        return None
    if pending.needs_spark:
        if holder(locations.ledger) is not None:
            return UNKNOWN
        return {"pipeline": pipeline.name, "files": 0, "bytes": 0, "named": [], "unfinished": pending.needs_spark}
    named = [uri.removeprefix(locations.landing).lstrip("/") for files in pending.named or () for uri in files]
    return {"pipeline": pipeline.name, "files": pending.files, "bytes": pending.bytes, "named": sorted(named)[:NAMED]}


def describe(event: dict[str, Any]) -> str:
    told = " (told by the bucket's notification)" if event.get("heard_by") == "notification" else ""
    if event.get("unfinished"):
        return f"{event['unfinished']}: a run ended before it did{told}"
    named = ", ".join(event["named"]) + (" ..." if event["files"] > len(event["named"]) else "")
    return f"{event['files']} new file(s), {event['bytes']:,} bytes{told}: {named}"
