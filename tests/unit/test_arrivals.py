"""The on-arrival watcher's step (jobs/run/arrivals.py) without a triggerer, a clock or files:
listings and times in, events and cursors out. The triggerer's loop around it is tested in
tests/integration/test_arrival_watcher.py, with real files and a real run."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.run.arrivals import UNKNOWN, Cursor, Watch, describe

WATCH = Watch(quiet_period_s=30, listing_every_s=10)


def files(*names: str) -> dict:
    return {"pipeline": "p", "files": len(names), "bytes": 10 * len(names), "named": list(names)}


def steps(listings: list[tuple[float, object]], cursor: Cursor = Cursor()) -> list[tuple[float, dict]]:
    """The events a run of listings (at their times) makes."""
    events = []
    for now, listing in listings:
        event, cursor = WATCH.step(listing, cursor, now)
        if event is not None:
            events.append((now, event))
    return events


def test_an_event_once_the_landing_is_quiet_naming_the_files_and_not_again_until_taken():
    a, ab = files("a.json"), files("a.json", "b.json")
    listings = [(0, None), (10, a), (20, a), (40, a), (50, a), (60, ab), (80, ab), (90, ab), (100, None), (110, a)]
    events = steps(listings)
    assert events == [(40, {**a, "heard_by": "listing"}), (90, {**ab, "heard_by": "listing"})]
    # ...and after a run took everything (None), the same file landing again is news at its quiet time.
    assert steps([*listings, (140, a)]) == [*events, (140, {**a, "heard_by": "listing"})]


def test_it_looks_again_when_the_landing_may_be_quiet_not_only_at_its_listing_period():
    event, cursor = WATCH.step(files("a.json"), Cursor(), 0)
    assert event is None and cursor.look_at == 10  # the listing period is sooner than quiet
    _, cursor = WATCH.step(files("a.json"), cursor, 25)
    assert cursor.look_at == 30  # quiet at 30: sooner than the next listing at 35


def test_a_notification_starts_the_quiet_period_and_the_event_says_it_told():
    cursor = WATCH.notified(Cursor(look_at=600), 5)
    assert cursor.look_at == 35
    event, cursor = WATCH.step(files("a.json"), cursor, 35)
    assert event == {**files("a.json"), "heard_by": "notification"}


def test_no_answer_changes_nothing_but_when_to_look_again():
    _, cursor = WATCH.step(files("a.json"), WATCH.notified(Cursor(), 0), 20)
    event, after = WATCH.step(UNKNOWN, cursor, 25)
    assert event is None and after == Cursor(35, cursor.heard, cursor.since, cursor.heard_by, cursor.said)


def test_a_batch_a_run_left_unfinished_is_news_like_a_file():
    unfinished = {"pipeline": "p", "files": 0, "bytes": 0, "named": [], "unfinished": "batch 3 was planned"}
    ((_, event),) = steps([(0, unfinished), (30, unfinished), (40, unfinished)])
    assert describe(event) == "batch 3 was planned: a run ended before it did"


LISTINGS = st.lists(
    st.tuples(st.floats(0, 100), st.sampled_from([None, UNKNOWN, files("a"), files("a", "b"), files("c")])),
    max_size=30,
)


@settings(max_examples=int(os.environ.get("JOBS_HYPOTHESIS_EXAMPLES", "150")), deadline=None)
@given(LISTINGS)
def test_what_was_said_is_not_said_again_until_a_run_took_it_and_only_after_quiet(gaps):
    now, cursor, last_said = 0.0, Cursor(), None
    changed_at, last = 0.0, None
    for gap, listing in gaps:
        now += gap
        event, cursor = WATCH.step(listing, cursor, now)
        if listing is UNKNOWN:
            assert event is None
            continue
        if listing != last:
            changed_at, last = now, listing
        if listing is None:
            last_said = None  # a run took everything
        if event is not None:
            event = {k: v for k, v in event.items() if k != "heard_by"}
            assert event == listing != last_said
            assert now - changed_at >= WATCH.quiet_period_s
            last_said = event
