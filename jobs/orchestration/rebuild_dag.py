"""The rebuild DAG: `python -m jobs rebuild` of one pipeline, triggered by hand
(jobs/change/rebuild.py). After its switch, the pipeline's own DAG runs the new build: its
tasks resolve the pipeline's locations through <root>/builds/<pipeline>/_CURRENT.json."""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, Param

from jobs import declare
from jobs.declare.operations import Orchestration
from jobs.orchestration import environment
from jobs.orchestration.factory import DAG_PREFIX, START_DATE, built
from jobs.orchestration.operators import JobsSubmitOperator
from jobs.orchestration.retries import retry_args
from jobs.validate.suite import with_suites

REBUILD_DAG_ID = f"{DAG_PREFIX}rebuild"


class RebuildOperator(JobsSubmitOperator):
    """`python -m jobs rebuild PIPELINE`, or `--rollback`, from the DAG run's params; the
    build's id is the DAG run's, so a retried task resumes the same build."""

    def __init__(self, *, root: str, **kwargs: Any) -> None:
        super().__init__(jobs_args=[], root=root, **kwargs)

    def arguments(self, context: Any) -> list[str]:
        from jobs.backfill import backfill_id_for

        params, dag_run = context["params"], context["dag_run"]
        args = ["rebuild", str(params["pipeline"]), f"--root={self.root}"]
        if params.get("with_downstream"):  # then the pipelines that read its table, and theirs
            args.append("--with-downstream")
        if params.get("rollback"):
            return [*args, "--rollback"]
        args.append(f"--id={backfill_id_for(dag_run.run_id, dag_run.run_after)}")
        if params.get("accept_quarantine"):
            args.append("--accept-quarantine")
        most = params.get("max_files_per_trigger")
        return [*args, f"--max-files-per-trigger={int(most)}"] if most else args


def rebuild_dags() -> dict[str, DAG]:
    pipelines = sorted(with_suites(declare.load_each()).pipelines)
    return {REBUILD_DAG_ID: built(REBUILD_DAG_ID, rebuild_dag, pipelines, environment.root())}


def rebuild_dag(pipelines: list[str], root: str) -> DAG:
    with DAG(
        dag_id=REBUILD_DAG_ID,
        auto_register=False,
        is_paused_upon_creation=False,  # it only runs when triggered by hand
        description="Read every landed file again under a pipeline's declaration into a new build, then switch",
        schedule=None,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        default_args=retry_args(Orchestration(), root),
        params={
            "pipeline": Param(pipelines[0] if pipelines else None, type="string", examples=pipelines),
            "rollback": Param(False, type="boolean", description="back to the build in use before the last switch"),
            "with_downstream": Param(
                False,
                type="boolean",
                description="then each pipeline that reads its table, and theirs (a rollback: the lowest first)",
            ),
            "max_files_per_trigger": Param(None, type=["null", "integer"], minimum=1),
            "accept_quarantine": Param(
                False,
                type="boolean",
                description="switch even if the new build quarantines far more of its rows than the build in use",
            ),
        },
        tags=["jobs", "rebuild"],
        doc_md="`python -m jobs rebuild` (or `--rollback`) of the pipeline named. See docs/changes.md.",
    ) as dag:
        RebuildOperator(task_id="rebuild", root=root, name="jobs-rebuild")
    return dag
