"""A pipeline's DAG run that overruns: each pipeline's (and group's) DAG carries an Airflow
DeadlineAlert, `airflow: {deadline: ...}` after the DAG run was queued (by default its run's
`timeout`: a DAG run still going then is retrying).

The scheduler notices the deadline pass and records it (Airflow's `deadline` table, its UI,
the metric `deadline_alerts.deadline_missed`); the triggerer then runs `overran`, whose line
is in its log and whose return value Airflow keeps as the callback's output. A deadline
measures a DAG run, not a table: a table that stops getting rows is freshness's
(jobs/history/freshness.py).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from airflow.sdk import AsyncCallback, DeadlineAlert, DeadlineReference

from jobs.declare.operations import Orchestration
from jobs.units import duration

log = logging.getLogger(__name__)


def deadline_alert(dag_id: str, orchestration: Orchestration) -> DeadlineAlert:
    deadline_s = orchestration.deadline_s or orchestration.timeout_s
    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=timedelta(seconds=deadline_s),
        callback=AsyncCallback(overran, kwargs={"dag_id": dag_id, "deadline_s": deadline_s}),
        name=f"{dag_id} overran",
    )


async def overran(dag_id: str, deadline_s: float, context: dict[str, Any] | None = None) -> str:
    """Said when a DAG run is still going `deadline_s` after it was queued (run in the triggerer)."""
    run = (context or {}).get("dag_run") or {}
    said = (
        f"{dag_id}: DAG run {run.get('dag_run_id', '?')} (queued {run.get('queued_at', '?')}) overran its deadline "
        f"of {duration(deadline_s)}; it was {run.get('state', '?')} then"
    )
    log.warning(said)
    return said
