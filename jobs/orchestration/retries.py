"""How Airflow retries a DAG's tasks: the declaration's `airflow:` block (a group's, the
largest of its members': jobs/declare/groups.py), with delays that outlast the checkpoint's
S3 lease when the root is a bucket."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from jobs.declare.operations import Orchestration
from jobs.lake.layout import is_s3
from jobs.settings import settings

# Each retry waits twice as long as the one before (Airflow 3 takes the multiplier).
BACKOFF_MULTIPLIER = 2.0


def outlasting_delay(delay_s: float, retries: int, max_delay_s: float, lease_s: float) -> float:
    """The first retry delay at which the last retry starts after `lease_s`: a run that died
    on another worker leaves the checkpoint's S3 lease behind until it expires. Airflow waits
    at least delay * 2^(n-1) before retry n (exponential backoff), at most max_delay."""

    def least_wait(delay: float) -> float:
        return sum(min(delay * BACKOFF_MULTIPLIER**n, max_delay_s) for n in range(retries))

    while retries and least_wait(delay_s) <= lease_s and delay_s < max_delay_s:
        delay_s += 15
    return delay_s


def retry_args(orchestration: Orchestration, root: str) -> dict[str, Any]:
    """A DAG's default_args: retries, their delays and backoff, and the execution timeout."""
    delay = settings().retry_delay_s or orchestration.retry_delay_s
    if is_s3(root) and settings().retry_delay_s is None:
        delay = outlasting_delay(delay, orchestration.retries, orchestration.max_retry_delay_s, settings().s3_lease_s)
    return {
        "retries": orchestration.retries,
        "retry_delay": timedelta(seconds=delay),
        "retry_exponential_backoff": BACKOFF_MULTIPLIER,
        "max_retry_delay": timedelta(seconds=max(delay, orchestration.max_retry_delay_s)),
        "execution_timeout": timedelta(seconds=orchestration.timeout_s),
    }
