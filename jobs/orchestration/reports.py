"""What a run's tasks hand on: its report's summary and validation verdict (the task log and
the XCom), and its table's Asset event. Shared by the pipeline DAGs and the group DAGs."""

from __future__ import annotations

import json
import logging
from typing import Any

from airflow.sdk import Asset, TriggerRule, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations
from jobs.orchestration import environment

log = logging.getLogger(__name__)


def location_asset(location: str, pipeline_name: str) -> Asset:
    """An Asset named by its location (Airflow wants s3:// where Spark wants s3a://)."""
    uri = "s3://" + location.removeprefix("s3a://") if location.startswith("s3a://") else f"file://{location}"
    return Asset(uri=uri, group="jobs", extra={"pipeline": pipeline_name})


def table_asset(pipeline_name: str, root: str) -> Asset:
    """The pipeline's output table: another root is another table, not the same Asset moved."""
    return location_asset(Locations.resolve(pipeline_name, root=root).output, pipeline_name)


def run_summary(pipeline_name: str, root: str, jobs_run_id: str) -> dict[str, Any]:
    """What a run's task log and XCom show of its report, with its validation verdict (None
    when nothing new was validated) and where the whole report is."""
    from jobs.lake import fs
    from jobs.lake.builds import in_use
    from jobs.run.report import load_report, report_uri
    from jobs.validate.result import result_uri

    with environment.task_environment(log):
        locations = in_use(pipeline_name, root)
        report = load_report(locations.runs, jobs_run_id)
        results = result_uri(locations.runs, jobs_run_id)
        validation = fs.read_json(results) if fs.exists(results) else None
    summary = report.model_dump(
        include={
            "report_version",
            "run_id",
            "status",
            "error",
            "duration_s",
            "batches",
            "input_files",
            "input_rows",
            "used_rows",
            "quarantined_rows",
            "late_rows_dropped",
            "output_rows",
            "watermark",
            "warnings",
            "rules",  # each row rule's action and violations
        }
    )
    summary["validation"] = validation["status"] if validation else None
    summary["report"] = report_uri(locations.runs, jobs_run_id)
    for line in json.dumps(summary, indent=2).splitlines():
        log.info("%s", line)
    for warning in report.warnings:
        log.warning("%s: %s", pipeline_name, warning)
    return summary


@task(retries=0)
def validation_verdict(pipeline_name: str, root: str, jobs_run_id: str) -> str:
    """The verdict of the run's validation, made in the run's own Spark application: the
    task fails on a failed `fail` expectation, and is skipped when the run committed no
    batch (nothing new landed)."""
    from jobs.lake import fs
    from jobs.lake.builds import in_use
    from jobs.run.report import load_report
    from jobs.validate.result import ValidationResult, result_uri

    with environment.task_environment(log):
        runs = in_use(pipeline_name, root).runs
        report = load_report(runs, jobs_run_id)
        results = result_uri(runs, jobs_run_id)
        result = ValidationResult.model_validate(fs.read_json(results)) if fs.exists(results) else None
    if not report.batch_ids:
        raise AirflowSkipException(f"nothing to validate: run {jobs_run_id} committed no batch (nothing new landed)")
    if result is None:
        raise AirflowFailException(f"run {jobs_run_id} has no validation result ({results}): validate it by hand")
    for line in result.summary().splitlines():
        log.info("%s", line)
    if result.status == "failed":
        raise AirflowFailException(f"validation of run {jobs_run_id}: {ExitCode.INVALID.meaning}")
    log.info("results: %s", results)
    return result.status


@task(trigger_rule=TriggerRule.NONE_FAILED)
def run_report(pipeline_name: str, root: str, jobs_run_id: str) -> dict[str, Any]:
    """The run report and its validation verdict: into the task log and the XCom."""
    return run_summary(pipeline_name, root, jobs_run_id)


@task
def table_updated(pipeline_name: str, root: str, summary: dict[str, Any]) -> None:
    """An event for the table's Asset, with the run report as its extra, when the run
    appended rows; skipped otherwise, so consumers (the data quality DAG) wake for new
    rows only."""
    if summary["output_rows"] == 0:
        raise AirflowSkipException(f"no Asset event: run {summary['run_id']} appended no rows")
    get_current_context()["outlet_events"][table_asset(pipeline_name, root)].extra = summary
