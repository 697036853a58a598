"""Group DAGs, jobs_group_<group>: the pipelines of a group (jobs/declare/groups.py) in one
Spark application per DAG run.

    run (the members in one spark-submit, each validated in it) -> members_to_rerun ->
    rerun (mapped: each failed member alone) -> publish_reports (an Asset event per member
    that appended rows) -> members_verdict, on the members' one schedule
"""

from __future__ import annotations

import logging
import re
from typing import Any

from airflow.sdk import DAG, AssetAlias, TriggerRule, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from jobs import declare
from jobs.declare.groups import groups
from jobs.lake.layout import Locations
from jobs.orchestration import environment
from jobs.orchestration.factory import DAG_PREFIX, START_DATE, _retry_args
from jobs.orchestration.operators import GroupRunOperator, RunPipelineOperator
from jobs.orchestration.reports import published_report, table_asset

log = logging.getLogger(__name__)

GROUP_DAG_PREFIX = f"{DAG_PREFIX}group_"


def _final_run_id(pipeline_name: str, root: str, group_run_id: str) -> str:
    """The member's last run of this DAG run: the group's, or its latest rerun's."""
    from jobs.lake import fs

    runs = Locations.resolve(pipeline_name, root=root).runs
    tries = [re.fullmatch(rf"{re.escape(group_run_id)}\.r(\d+)\.json", name) for name in fs.list_names(runs)]
    last = max((int(found.group(1)) for found in tries if found), default=None)
    return group_run_id if last is None else f"{group_run_id}.r{last}"


@task(retries=0)
def members_to_rerun(outcome: dict[str, Any]) -> list[str]:
    """The members whose run in the group failed in a way a rerun can change."""
    return outcome["rerun"]


@task(trigger_rule=TriggerRule.ALL_DONE)
def publish_reports(group: str, root: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """Each member's last run report and validation verdict (into the log and the XCom),
    and an event for the table's Asset of each member that appended rows."""
    events = get_current_context()["outlet_events"][group_alias(group)]
    published = {}
    for name in outcome["members"]:
        with environment.task_environment(log):
            run_id = _final_run_id(name, root, outcome["run_id"])
        log.info("%s: run %s", name, run_id)
        published[name] = published_report(name, root, run_id)
        if published[name]["status"] == "succeeded" and published[name]["output_rows"]:
            events.add(table_asset(name, root), extra=published[name])
    return published


@task(trigger_rule=TriggerRule.ALL_DONE, retries=0)
def members_verdict(published: dict[str, Any]) -> None:
    """Fails the DAG run when a member's last run failed or its output failed validation."""
    failed = [
        f"{name} ({report['status']}: {report['error']})"
        if report["status"] != "succeeded"
        else f"{name} (validation failed)"
        for name, report in published.items()
        if report["status"] != "succeeded" or report["validation"] == "failed"
    ]
    if failed:
        raise AirflowFailException(f"{len(failed)} of {len(published)} members failed: {'; '.join(failed)}")
    log.info("every member succeeded: %s", ", ".join(published))


def group_alias(group: str) -> AssetAlias:
    return AssetAlias(f"jobs-group-{group}")


def group_dag(group: str, members: list[declare.PipelineBase], root: str) -> DAG:
    names = [member.name for member in members]
    with DAG(
        dag_id=f"{GROUP_DAG_PREFIX}{group}",
        description=f"{len(names)} pipelines in one Spark application: {', '.join(names)}",
        schedule=members[0].schedule,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        default_args=_retry_args(members[0].orchestration, root),
        tags=["jobs", "group"],
        doc_md=(
            f"**{group}**: runs {', '.join(names)} in one Spark application, each validated in it; a member "
            "whose run failed in a way a rerun can change runs again on its own (`rerun`). Each member's table "
            "Asset is updated when its run appended rows. See README, Groups."
        ),
    ) as dag:
        sizes: dict[str, str] = {}
        for member in members:
            sizes.update(member.spark.session_conf())
        run = GroupRunOperator(task_id="run", pipeline_names=names, root=root, name=f"jobs-group-{group}", conf=sizes)
        rerun = RunPipelineOperator.partial(task_id="rerun", root=root, validate=True, group_task="run").expand(
            pipeline_name=members_to_rerun(run.output)
        )
        published = publish_reports.override(outlets=[group_alias(group)])(group, root, run.output)
        rerun >> published
        members_verdict(published)
    return dag


def group_dags() -> dict[str, DAG]:
    root = environment.root()
    return {
        f"{GROUP_DAG_PREFIX}{group}": group_dag(group, members, root)
        for group, members in groups(declare.load_all()).items()
    }
