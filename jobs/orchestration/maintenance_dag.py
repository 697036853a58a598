"""The maintenance DAG: every Delta table compacted and vacuumed, daily (jobs/run/maintain.py)."""

from __future__ import annotations

from airflow.sdk import DAG

from jobs import declare
from jobs.declare.operations import Orchestration
from jobs.exit_codes import ExitCode
from jobs.orchestration import environment
from jobs.orchestration.factory import DAG_PREFIX, START_DATE, built
from jobs.orchestration.operators import JobsSubmitOperator
from jobs.orchestration.retries import retry_args
from jobs.validate.suite import with_suites

MAINTENANCE_DAG_ID = f"{DAG_PREFIX}maintenance"


def maintenance_dags() -> dict[str, DAG]:
    """The maintenance DAG over every pipeline whose table is Delta (none: no DAG)."""
    pipelines = with_suites(declare.load_each()).pipelines
    tables = sorted(name for name, p in pipelines.items() if p.output.format == "delta")
    if not tables:
        return {}
    return {MAINTENANCE_DAG_ID: built(MAINTENANCE_DAG_ID, maintenance_dag, tables, environment.root())}


def maintenance_dag(pipelines: list[str], root: str) -> DAG:
    """Daily: a task per Delta table, `python -m jobs maintain` (compaction of its closed
    partitions between the pipeline's runs, under its lock, then vacuum)."""
    with DAG(
        dag_id=MAINTENANCE_DAG_ID,
        auto_register=False,
        description="Compact each Delta table's closed partitions and vacuum what no version needs",
        schedule="@daily",
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        default_args=retry_args(Orchestration(), root),
        tags=["jobs", "maintenance"],
        doc_md=(
            "Daily, for each pipeline whose table is Delta: `python -m jobs maintain` (OPTIMIZE of the closed "
            "partitions, between the pipeline's runs, under its lock; VACUUM within `retention.time_travel`)."
        ),
    ) as dag:
        for name in pipelines:
            JobsSubmitOperator(
                task_id=f"maintain_{name}",
                jobs_args=["maintain", name, f"--root={root}"],
                root=root,
                skip_on_exit=(ExitCode.REFUSED,),  # no batch committed yet: nothing to maintain
                name=f"jobs-maintain-{name}",
            )
    return dag
