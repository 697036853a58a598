"""A stop request (Ctrl-C, SIGTERM): the runs in progress stop at their next poll.

Set by the command line's signal handler (jobs/cli/__init__.py), read by each run's watch
(jobs/run/runner.py). A flag rather than a KeyboardInterrupt: one raised inside a py4j call
could turn a clean stop into a failed run. Light on purpose: the handler imports it.
And how a run stops its query (`stop_query`)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

_requested = threading.Event()
_in_progress = 0  # more than one in a group (jobs/launch/group.py)
_counting = threading.Lock()


def request_stop() -> bool:
    """Ask the runs in progress to stop cleanly; False if no run is in progress."""
    _requested.set()
    return _in_progress > 0


def requested() -> bool:
    return _requested.is_set()


def begin() -> None:
    """A run starts: a stop asked while none ran is forgotten."""
    global _in_progress
    with _counting:
        if _in_progress == 0:
            _requested.clear()
        _in_progress += 1


def end() -> None:
    global _in_progress
    with _counting:
        _in_progress -= 1


def stop_query(query: StreamingQuery) -> bool:
    """Stop the query, waiting at most spark.sql.streaming.stopTimeout (BASE_CONF). One that
    does not stop in time (stuck in a stalled call) could still commit a batch whose files
    the clean-up would remove: its JVM is ended instead, as a crash would. False when the
    JVM is gone, so that this run accounts nothing more."""
    try:
        query.stop()
        return True
    except Exception:  # noqa: BLE001 - py4j's TimeoutException, or the JVM died
        try:
            running = query.isActive
        except Exception:  # noqa: BLE001 - the JVM is gone: nothing is left to stop
            return False
    if running:
        from jobs.session import halt_jvm

        halt_jvm()
    return not running
