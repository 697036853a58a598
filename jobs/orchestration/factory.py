"""DAGs built from the declarations in jobs/pipelines/.

jobs_<pipeline>    run (spark-submit, availableNow, validated in it) -> validate (its verdict)
                   -> run_report -> table_updated
                   on the declared schedule (by hand only when a group runs it); the output
                   table is an Asset, updated only by a run that appended rows
(the group DAGs, jobs_group_<group>: group_dags.py)
jobs_backfill      check_params -> reprocess -> validate -> publish (a copy) or replace (a Delta table's range), by hand
(the data quality DAG, jobs_data_quality: quality_dag.py)

A declaration that does not load (bad YAML, a bad field, a schedule Airflow refuses) costs
its own DAG only: jobs_<pipeline> is built as a DAG whose one task fails with the one-line
error, and dags/jobs_declarations.py raises it as an import error of its own, where Airflow
shows import errors; every other DAG is built.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from textwrap import shorten
from typing import Any

from airflow.sdk import (
    DAG,
    AssetAlias,
    Param,
    get_current_context,
    task,
)
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from jobs import declare
from jobs.backfill.options import BACKFILL_OPTIONS
from jobs.backfill.steps import Step
from jobs.declare.operations import Orchestration
from jobs.orchestration import arrival, environment
from jobs.orchestration.deadlines import deadline_alert
from jobs.orchestration.operators import BackfillStepOperator
from jobs.orchestration.reports import (
    location_asset,
    run_report,
    table_asset,
    table_updated,
    validation_verdict,
)
from jobs.orchestration.retries import retry_args
from jobs.orchestration.run_operators import RunPipelineOperator
from jobs.request import dag_params
from jobs.validate.suite import with_suites

log = logging.getLogger(__name__)
START_DATE = datetime(2024, 1, 1, tzinfo=UTC)
DAG_PREFIX = "jobs_"
BACKFILL_DAG_ID = f"{DAG_PREFIX}backfill"


# Published backfill versions: their locations are params, known only at run time.
PUBLISHED_ALIAS = AssetAlias("jobs-published")


# Scheduled pipeline DAGs.
def pipeline_dag(pipeline: declare.PipelineBase, root: str) -> DAG:
    with DAG(
        dag_id=f"{DAG_PREFIX}{pipeline.name}",
        auto_register=False,
        description=pipeline.description,
        schedule=arrival.schedule(pipeline, root),  # a cron, a preset, or on arrival
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,  # two runs never share the checkpoint (the run also locks it)
        default_args=retry_args(pipeline.orchestration, root),
        deadline=deadline_alert(f"{DAG_PREFIX}{pipeline.name}", pipeline.orchestration),  # an overrun, alerted
        params=dag_params(),  # a run's options a DAG run may set, as the run request defines them
        tags=["jobs", "pipeline"],
        doc_md=f"**{pipeline.name}**: {pipeline.description}\n\nDeclared in `jobs/pipelines/{pipeline.name}.yaml`.",
    ) as dag:
        sizes = pipeline.spark_settings.session_conf()  # shown on the task; spark-submit's are its application's
        run = RunPipelineOperator(
            task_id="run",
            pipeline_name=pipeline.name,
            root=root,
            validate=True,
            name=f"jobs-{pipeline.name}",
            conf=sizes,
        )
        validate = validation_verdict.override(task_id="validate")(pipeline.name, root, run.output)
        summary = run_report(pipeline.name, root, run.output)
        run >> validate >> summary
        table_updated.override(outlets=[table_asset(pipeline.name, root)])(pipeline.name, root, summary)
    return dag


def pipeline_dags() -> dict[str, DAG]:
    """A DAG per declaration (run by hand only when its group's DAG runs it: group_dags.py);
    for one that does not load, or whose DAG Airflow refuses, a DAG that says why."""
    root, declared = environment.root(), with_suites(declare.load_each())
    dags = {
        f"{DAG_PREFIX}{name}": built(f"{DAG_PREFIX}{name}", pipeline_dag, p, root)
        for name, p in declared.pipelines.items()
    }
    dags |= {f"{DAG_PREFIX}{name}": broken_dag(f"{DAG_PREFIX}{name}", why) for name, why in declared.broken.items()}
    return dict(sorted(dags.items()))


def backfill_dags() -> dict[str, DAG]:
    """The backfill DAG, offering the pipelines a closed range can be backfilled for (windows)."""
    from jobs.flow.patterns import pattern_of

    pipelines = with_suites(declare.load_each()).pipelines
    backfillable = sorted(name for name, p in pipelines.items() if pattern_of(p).backfill_refusal is None)
    return {BACKFILL_DAG_ID: built(BACKFILL_DAG_ID, backfill_dag, backfillable)}


def built(dag_id: str, build, *args: Any) -> DAG:
    """`build(*args)`, checked as Airflow checks a DAG when it bags it; a DAG that says why
    when that fails, so that the DAG file's other DAGs are still built."""
    try:
        dag = build(*args)
        dag.validate()
    except Exception as error:  # noqa: BLE001 - one DAG's mistake must not take the file's others down
        return broken_dag(dag_id, f"{type(error).__name__}: {error}")
    return dag


@task(retries=0)
def refuse(why: str) -> None:
    """Fail with the reason the DAG could not be built (a broken declaration)."""
    raise AirflowFailException(why)


def broken_dag(dag_id: str, why: str) -> DAG:
    """A DAG whose one task fails with `why`: a declaration that does not load keeps a DAG of
    its name, which says what is wrong where its runs are looked at."""
    with DAG(
        dag_id=dag_id,
        auto_register=False,  # each DAG file hands Airflow the DAGs the factory returns, and no other
        description=shorten(f"does not load: {why}", 500, placeholder=" ... (the DAG's docs say all)"),
        schedule=None,
        start_date=START_DATE,
        catchup=False,
        tags=["jobs", "broken"],
        doc_md=f"**{dag_id} does not load**, and runs nothing until it is fixed:\n\n    {why}",
    ) as dag:
        refuse.override(task_id="declaration")(why)
    return dag


def declaration_problems() -> None:
    """Raise, as one error, why each declaration that does not load fails (dags/jobs_declarations.py:
    an import error of a file of its own, which builds no DAG, so that it costs no other)."""
    broken = with_suites(declare.load_each()).broken
    if broken:
        lines = [f"{name}: {why}" for name, why in broken.items()]
        raise declare.DeclarationError(f"{len(lines)} declaration(s) do not load:\n" + "\n".join(lines))


# The backfill DAG.
@task(retries=0)
def check_params() -> dict[str, Any]:
    """Every param checked before any Spark work; the backfill request the next tasks follow."""
    from jobs import backfill

    context = get_current_context()
    dag_run = context["dag_run"]
    params = {k: v for k, v in context["params"].items() if v not in (None, "", [])}
    root = environment.root()
    try:
        with environment.task_environment(log):
            request = backfill.backfill_request(
                params,
                root=root,
                allowed_roots=backfill.publish_roots(root),
                backfill_id=backfill.backfill_id_for(dag_run.run_id, dag_run.run_after),
            )
    except backfill.BackfillError as error:
        raise AirflowFailException(f"rejected, nothing was run: {error}") from None
    for warning in request.warnings:
        log.warning("%s", warning)
    log.info("backfill request: %s", json.dumps(request.to_dict(), indent=2))
    return request.to_dict()


@task(outlets=[PUBLISHED_ALIAS])
def publish_backfill(request: dict[str, Any]) -> dict[str, Any]:
    """Point <publish_to>/_CURRENT.json at the validated version: one atomic write; then an
    event for the publish location's Asset (through the alias), the pointer as its extra."""
    from jobs.backfill import BackfillRequest
    from jobs.backfill.steps import Backfill

    with environment.task_environment(log):
        backfill = Backfill.of(BackfillRequest.from_dict(request))
        if Step.PUBLISH not in backfill.steps:
            raise AirflowSkipException(
                "the backfill replaces the range in the production Delta table (the task replace)"
            )
        pointer = backfill.run(Step.PUBLISH).to_dict()
    log.info("published: %s", json.dumps(pointer, indent=2))
    asset = location_asset(backfill.request.publish_to, backfill.request.pipeline)
    get_current_context()["outlet_events"][PUBLISHED_ALIAS].add(asset, extra=pointer)
    return pointer


def backfill_dag(pipelines: list[str]) -> DAG:
    with DAG(
        dag_id=BACKFILL_DAG_ID,
        auto_register=False,
        # Created unpaused: it only ever runs when triggered by hand, and a trigger of a
        # paused DAG would wait, queued, until someone unpaused it.
        is_paused_upon_creation=False,
        description="Reprocess a closed range of landed data into its own location, then publish it",
        schedule=None,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        default_args=retry_args(Orchestration(), environment.root()),
        params={
            # Suggestions, not an enum: another pipeline gets check_params' readable refusal
            # (why, and what to run instead), not a JSON-schema dump.
            "pipeline": Param(
                pipelines[0] if pipelines else None,
                type="string",
                examples=pipelines,
                description="a window or events pipeline (the others are refused, with what to run instead)",
            ),
            # The command line's options (jobs/backfill/options.py).
            **{option.name: Param(None, description=option.help, **option.schema) for option in BACKFILL_OPTIONS},
        },
        tags=["jobs", "backfill"],
        doc_md=(
            "Reprocesses the landed files of a date range or of some prefixes with its own checkpoint, "
            "keeps every window of the range (the last ones too), validates the result and publishes it "
            "as `<publish_to>/_CURRENT.json`; for a Delta table without publish_to, writes the range's dates "
            "over the production table's in one commit (the task replace). See docs/backfills.md."
        ),
    ) as dag:
        # The command line's steps, in its order (jobs/backfill/steps.py): the last is one of two.
        request = check_params()
        reprocess, validate, replace = (
            BackfillStepOperator(task_id=str(step), step=step, name=f"jobs-backfill-{step}")
            for step in (Step.REPROCESS, Step.VALIDATE, Step.REPLACE)
        )
        request >> reprocess >> validate >> [publish_backfill(request), replace]
    return dag
