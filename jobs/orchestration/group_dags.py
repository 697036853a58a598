"""Group DAGs, jobs_group_<group>: the pipelines of a group (jobs/declare/groups.py) in one
Spark application per DAG run.

    run (the members in one spark-submit, each validated in it) -> members_to_rerun ->
    rerun (mapped: each failed member alone) -> run_reports (an Asset event per member
    that appended rows) -> members_verdict, on the members' one schedule (on arrival: when
    files land in any member's landing, each watched as its declaration says)

The group's settings are the group's own (jobs/declare/groups.py): its spark-submit takes
the largest memory of its members, its tasks the most retries and the longest timeout any
member declares, as `python -m jobs run A B C` does. A group whose members do not share a
schedule gets a DAG that says so (factory.py broken_dag); the other groups are built.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from airflow.sdk import DAG, AssetAlias, TriggerRule, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from jobs import declare
from jobs.declare.groups import each_group, group_orchestration, group_spark_conf
from jobs.orchestration import arrival, environment
from jobs.orchestration.deadlines import deadline_alert
from jobs.orchestration.factory import DAG_PREFIX, START_DATE, broken_dag, built
from jobs.orchestration.reports import run_summary, table_asset
from jobs.orchestration.retries import retry_args
from jobs.orchestration.run_operators import GroupRunOperator, RunPipelineOperator
from jobs.units import ON_ARRIVAL, ON_UPSTREAM
from jobs.validate.suite import with_suites

log = logging.getLogger(__name__)

GROUP_DAG_PREFIX = f"{DAG_PREFIX}group_"


def _final_run_id(pipeline_name: str, root: str, group_run_id: str) -> str:
    """The member's last run of this DAG run: the group's, or its latest rerun's."""
    from jobs.lake import fs
    from jobs.lake.builds import in_use

    runs = in_use(pipeline_name, root).runs
    tries = [re.fullmatch(rf"{re.escape(group_run_id)}\.r(\d+)\.json", name) for name in fs.list_names(runs)]
    last = max((int(found.group(1)) for found in tries if found), default=None)
    return group_run_id if last is None else f"{group_run_id}.r{last}"


@task(retries=0)
def members_to_rerun(outcome: dict[str, Any]) -> list[str]:
    """The members whose run in the group failed in a way a rerun can change."""
    return outcome["rerun"]


@task(trigger_rule=TriggerRule.ALL_DONE)
def run_reports(group: str, root: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """Each member's last run report and validation verdict (into the log and the XCom),
    and an event for the table's Asset of each member that appended rows."""
    events = get_current_context()["outlet_events"][group_alias(group)]
    summaries = {}
    for name in outcome["members"]:
        with environment.task_environment(log):
            run_id = _final_run_id(name, root, outcome["run_id"])
        log.info("%s: run %s", name, run_id)
        summaries[name] = run_summary(name, root, run_id)
        if summaries[name]["status"] == "succeeded" and summaries[name]["output_rows"]:
            events.add(table_asset(name, root), extra=summaries[name])
    return summaries


@task(trigger_rule=TriggerRule.ALL_DONE, retries=0)
def members_verdict(summaries: dict[str, Any]) -> None:
    """Fails the DAG run when a member's last run failed or its output failed validation."""
    failed = [
        f"{name} ({report['status']}: {report['error']})"
        if report["status"] != "succeeded"
        else f"{name} (validation failed)"
        for name, report in summaries.items()
        if report["status"] != "succeeded" or report["validation"] == "failed"
    ]
    if failed:
        raise AirflowFailException(f"{len(failed)} of {len(summaries)} members failed: {'; '.join(failed)}")
    log.info("every member succeeded: %s", ", ".join(summaries))


def group_alias(group: str) -> AssetAlias:
    return AssetAlias(f"jobs-group-{group}")


def _schedule(members: list[declare.PipelineBase], root: str) -> Any:
    """The members' one schedule: declared, or on arrival at any landing, or on rows in any upstream table."""
    own = members[0].schedule
    if own == ON_UPSTREAM:
        return arrival.upstream_schedule(members, root)
    return arrival.members_schedule(members, root) if own == ON_ARRIVAL else own


def group_dag(group: str, members: list[declare.PipelineBase], root: str) -> DAG:
    names = [member.name for member in members]
    with DAG(
        dag_id=f"{GROUP_DAG_PREFIX}{group}",
        auto_register=False,
        description=f"{len(names)} pipelines in one Spark application: {', '.join(names)}",
        schedule=_schedule(members, root),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        default_args=retry_args(group_orchestration(members), root),
        deadline=deadline_alert(f"{GROUP_DAG_PREFIX}{group}", group_orchestration(members)),
        tags=["jobs", "group"],
        doc_md=(
            f"**{group}**: runs {', '.join(names)} in one Spark application, each validated in it; a member "
            "whose run failed in a way a rerun can change runs again on its own (`rerun`). Each member's table "
            'Asset is updated when its run appended rows. See docs/airflow.md, "Group DAGs".'
        ),
    ) as dag:
        sizes = group_spark_conf(members)  # shown on the task; spark-submit's are its application's
        run = GroupRunOperator(task_id="run", pipeline_names=names, root=root, name=f"jobs-group-{group}", conf=sizes)
        rerun = RunPipelineOperator.partial(task_id="rerun", root=root, validate=True, group_task="run").expand(
            pipeline_name=members_to_rerun(run.output)
        )
        summaries = run_reports.override(outlets=[group_alias(group)])(group, root, run.output)
        rerun >> summaries
        members_verdict(summaries)
    return dag


def group_dags() -> dict[str, DAG]:
    """A DAG per group of the declarations that load; for a group refused, a DAG that says why."""
    root = environment.root()
    found, refused = each_group(with_suites(declare.load_each()).pipelines)
    dags = {f"{GROUP_DAG_PREFIX}{g}": built(f"{GROUP_DAG_PREFIX}{g}", group_dag, g, m, root) for g, m in found.items()}
    dags |= {f"{GROUP_DAG_PREFIX}{g}": broken_dag(f"{GROUP_DAG_PREFIX}{g}", why) for g, why in refused.items()}
    return dict(sorted(dags.items()))
