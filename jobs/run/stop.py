"""A stop request (Ctrl-C, SIGTERM): the runs in progress stop at their next poll.

Set by the command line's signal handler (jobs/cli/__init__.py), read by each run's watch
(jobs/run/runner.py). A flag rather than a KeyboardInterrupt: one raised inside a py4j call
could turn a clean stop into a failed run. Light on purpose: the handler imports it."""

from __future__ import annotations

import threading

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
