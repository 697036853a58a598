"""A pipeline's DAG run that overruns: a pipeline (or a group's member) declaring
`airflow: {deadline: ...}` has its DAG carry an Airflow DeadlineAlert that long after the DAG
run was queued. Not by default: Airflow 3.3.2's `airflow dags test` fails on any DAG with a
deadline once its run has succeeded (apache/airflow#73428, its fix #73430 not released).

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


def deadline_alert(dag_id: str, orchestration: Orchestration) -> DeadlineAlert | None:
    """The DAG's DeadlineAlert; None when none is declared."""
    deadline_s = orchestration.deadline_s
    if deadline_s is None:
        return None
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
