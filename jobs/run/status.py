"""How a run ended, as its report and its events say it."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """How a run ended (its report's `status`; `running` until it has)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REFUSED = "refused"
    STOPPED = "stopped"
