"""The data quality DAG, jobs_data_quality: every table validated and the report rebuilt,
and every table's freshness checked.

    validate_<pipeline> (each table rows were appended to) -> data_docs -> verdict, and
    freshness (fails on a table past its freshness: jobs/history/freshness.py),
    on the tables' Assets and hourly (daily when no table's freshness is under two days)
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from airflow.sdk import (
    DAG,
    AssetAny,
    AssetOrTimeSchedule,
    CronTriggerTimetable,
    Param,
    TriggerRule,
    get_current_context,
    task,
)
from airflow.sdk.exceptions import AirflowFailException

from jobs import declare
from jobs.declare.operations import Orchestration
from jobs.exit_codes import ExitCode
from jobs.orchestration import environment
from jobs.orchestration.factory import DAG_PREFIX, START_DATE, built
from jobs.orchestration.operators import ValidateTableOperator
from jobs.orchestration.reports import table_asset
from jobs.orchestration.retries import retry_args
from jobs.validate.suite import with_suites

log = logging.getLogger(__name__)
DATA_QUALITY_DAG_ID = f"{DAG_PREFIX}data_quality"
HOURLY_UNDER_S = 2 * 86400  # a table's freshness under this: the DAG checks hourly, else daily


def data_quality_dags() -> dict[str, DAG]:
    """The data quality DAG over every pipeline that loads."""
    from jobs.history.freshness import limit_of

    pipelines = with_suites(declare.load_each()).pipelines
    # Hourly where a table may not go two days without rows: a late one is alerted within the hour.
    limits = [limit for p in pipelines.values() if (limit := limit_of(p)[0]) is not None]
    clock = "@hourly" if min(limits, default=HOURLY_UNDER_S) < HOURLY_UNDER_S else "@daily"
    dag = built(DATA_QUALITY_DAG_ID, data_quality_dag, sorted(pipelines), environment.root(), clock)
    return {DATA_QUALITY_DAG_ID: dag}


@task(trigger_rule=TriggerRule.ALL_DONE, retries=0)
def data_docs(root: str) -> str:
    """Rebuild the summary page and the Data Docs site, whatever the validations said."""
    from jobs.quality_report import page as quality_report

    with environment.task_environment(log):
        page = quality_report.build(root, None, with_data_docs=True)
    log.info("data quality report: %s", page)
    return page


@task(trigger_rule=TriggerRule.NONE_FAILED, retries=0)
def verdict(pipelines: list[str], root: str) -> None:
    """Fails the DAG run when a table failed validation (its task is red too); says which
    pipelines' runs warn (a watermark ahead of now, most rows late)."""
    from jobs.lake.builds import in_use
    from jobs.run.report import recent_reports
    from jobs.run.warnings import HISTORY_RUNS, run_warnings

    with environment.task_environment(log):
        for name in pipelines:
            runs = recent_reports(in_use(name, root).runs, HISTORY_RUNS)
            for warning in run_warnings(runs, datetime.now(UTC)):
                log.warning("%s: %s", name, warning)
    log.info("every validated table passed its `fail` expectations")


@task(trigger_rule=TriggerRule.ALL_DONE, retries=0)
def freshness(pipelines: list[str], root: str) -> None:
    """Records each table past its freshness (the XCom `late`, the task log), a paused or
    silent pipeline's too, and alerts: the task fails, which calls whatever a deployment
    attaches to failures (on_failure_callback, a notifier, a cluster policy)."""
    from jobs.history import freshness as tables

    with environment.task_environment(log):
        checked = tables.of_logs(root, [declare.load(name) for name in pipelines], datetime.now(UTC))
    late = [f for f in checked if f.late]
    for table in late:
        log.warning("%s is late: %s (its last append: %s)", table.pipeline, table.describe(), table.last_append)
    if late:
        get_current_context()["ti"].xcom_push(key="late", value=[f.as_dict() for f in late])
        raise AirflowFailException(f"{len(late)} table(s) past their freshness: {', '.join(f.pipeline for f in late)}")
    log.info("every table with a freshness is within it (%d)", sum(f.limit_s is not None for f in checked))


def data_quality_dag(pipelines: list[str], root: str, clock: str = "@daily") -> DAG:
    assets = [table_asset(name, root) for name in pipelines]
    with DAG(
        dag_id=DATA_QUALITY_DAG_ID,
        auto_register=False,
        description="Validate every table with Great Expectations and rebuild Data Docs",
        schedule=AssetOrTimeSchedule(timetable=CronTriggerTimetable(clock, timezone="UTC"), assets=AssetAny(*assets)),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        default_args=retry_args(Orchestration(), root),
        params={
            "revalidate": Param(
                False, type="boolean", description="validate every table, also those no run appended rows to"
            )
        },
        tags=["jobs", "data-quality"],
        doc_md=(
            f"Runs when a table's Asset is updated, and on the clock ({clock}). Validates the tables rows were "
            "appended to since their last check (all of them with `revalidate`). A failed `fail` expectation "
            "fails its task; a table past its freshness fails the task `freshness`."
        ),
    ) as dag:
        checks = [
            ValidateTableOperator(
                task_id=f"validate_{name}",
                pipeline_name=name,
                root=root,
                skip_on_exit=(ExitCode.REFUSED,),  # nothing to validate (checked before spark-submit too)
                name=f"jobs-validate-{name}",
            )
            for name in pipelines
        ]
        docs = data_docs(root)
        checks >> docs
        [*checks, docs] >> verdict(pipelines, root)
        freshness(pipelines, root)
    return dag
