"""The operators that run pipelines: one pipeline's run request through spark-submit (or,
with nothing new, in the task's own process), and a group's requests in one application."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from airflow.sdk.exceptions import AirflowException, AirflowSkipException

from jobs.exit_codes import ExitCode
from jobs.orchestration import environment
from jobs.orchestration.operators import JobsSubmitOperator, log_arrivals
from jobs.units import new_run_id


class RunPipelineOperator(JobsSubmitOperator):
    """`python -m jobs run` of one pipeline's run request (jobs/request.py), with a run id
    chosen here and returned as the task's XCom, so the tasks after it find this run's
    report. Rate limits and a file to quarantine come from the DAG run's params.

    `validate`: the run validates its output in its own application (a failed validation
    is for a later task to report); otherwise the DAG's next task validates it.
    `group_task`: a rerun of a group's member; its run id follows the group run's."""

    def __init__(
        self, *, pipeline_name: str, root: str, validate: bool = False, group_task: str | None = None, **kwargs: Any
    ) -> None:
        if group_task:  # mapped over the members to rerun: named at run time
            kwargs.setdefault("name", f"jobs-{pipeline_name}")
        super().__init__(
            jobs_args=["run", pipeline_name], root=root, done_on_exit=(ExitCode.INVALID,) if validate else (), **kwargs
        )
        self.pipeline_name = pipeline_name
        self.pipeline_names = [pipeline_name]
        self.validate = validate
        self.group_task = group_task

    def run_request(self, context: Any):
        """This task's run request: the build in use, the DAG run's params."""
        from jobs import declare
        from jobs.lake.builds import in_use
        from jobs.request import RunRequest

        with environment.task_environment(self.log):
            reads = declare.load(self.pipeline_name).source.table  # another pipeline's table, if any
            locations = in_use(self.pipeline_name, self.root, reads)  # the build a rebuild switched to, if any
        request = RunRequest(
            self.pipeline_name, locations, validate=self.validate, run_id=self.run_id, link=context["ti"].log_url
        )
        return request.with_params(context["params"])

    def arguments(self, context: Any) -> list[str]:
        return self.request.argv()

    def spark_application(self, context: Any):
        return self._application

    def execute(self, context: Any) -> str:
        log_arrivals(context, self.log)
        self.run_id = new_run_id(datetime.now(UTC))
        if self.group_task:
            group_run = context["ti"].xcom_pull(task_ids=self.group_task)["run_id"]
            self.run_id = f"{group_run}.r{context['ti'].try_number}"
        self.request = self.run_request(context)
        if self._ran_without_spark():
            return self.run_id
        try:
            super().execute(context)
        except AirflowSkipException:
            raise
        except AirflowException as error:  # the run's one-line error (a rule's, a poison file's), not a trace
            why = self._run_error()
            raise type(error)(f"{error}: {why}" if why else str(error)) from error
        return self.run_id

    def _ran_without_spark(self) -> bool:
        """A run with nothing new needs no Spark application: it runs here, in the task's own
        process, and its report is stored as any run's. Otherwise its application (how much is
        new: a small increment starts lean) and False."""
        from dataclasses import replace

        from jobs import declare
        from jobs.launch import execute, finished_of
        from jobs.run.application import Application

        with environment.task_environment(self.log):
            self._application = Application.for_runs(self.name, [declare.load(self.pipeline_name)], [self.request])
            if self._application.needs_spark:
                said = self._application.pending[0].describe()
                self.log.info("%s: %s: running it with spark-submit", self.pipeline_name, said)
                return False
            finished = finished_of(execute(replace(self.request, start_spark=False)))
        if finished.code == ExitCode.REFUSED:
            raise AirflowException(f"python -m jobs run: {ExitCode.REFUSED.meaning}: {finished.error}")
        if finished.error:
            raise AirflowException(f"python -m jobs run: {finished.error}")
        return True

    def reported_code(self) -> ExitCode | None:
        from jobs.run.events import reported_code
        from jobs.run.report import RunStatus

        report = self._report()
        if report is None:
            return None
        return reported_code(report, self._validation() if report.status == RunStatus.SUCCEEDED else None)

    def _report(self):
        """This task's run report (None: the run never stored one)."""
        from jobs.run.report import load_report

        try:
            with environment.task_environment(self.log):
                return load_report(self.request.locations.runs, self.run_id)
        except Exception:  # noqa: BLE001 - no report (the run never started): the exit status says enough
            return None

    def _validation(self) -> str | None:
        from jobs.lake import fs
        from jobs.validate.result import result_uri

        with environment.task_environment(self.log):
            results = result_uri(self.request.locations.runs, self.run_id)
            return fs.read_json(results)["status"] if fs.exists(results) else None

    def _run_error(self) -> str | None:
        report = self._report()
        return report.error if report is not None else None


class GroupRunOperator(JobsSubmitOperator):
    """`python -m jobs run` of the members' run requests in one Spark application, each
    member validated in it.

    Succeeds whatever a member's run did (a member's outcome is read from its run report
    and validation result): returns the run id, each member's outcome and the members to
    run again on their own (their run failed in a way a rerun can change, was refused or
    stopped, or never ran). A member stopped on its data, or whose output failed
    validation, is not run again: a rerun would end the same."""

    def __init__(self, *, pipeline_names: list[str], root: str, **kwargs: Any) -> None:
        super().__init__(
            jobs_args=["run", *pipeline_names],
            root=root,
            done_on_exit=tuple(code for code in ExitCode if code != ExitCode.USAGE),
            **kwargs,
        )
        self.pipeline_names = pipeline_names

    def arguments(self, context: Any) -> list[str]:
        return ["run", "--request=[" + ",".join(r.to_json() for r in self.requests) + "]"]

    def spark_application(self, context: Any):
        return self._application

    def execute(self, context: Any) -> dict[str, Any]:
        from dataclasses import replace

        from jobs import declare
        from jobs.lake.builds import in_use
        from jobs.launch import execute_group
        from jobs.request import RunRequest
        from jobs.run.application import Application

        log_arrivals(context, self.log)
        self.run_id = new_run_id(datetime.now(UTC))
        link = context["ti"].log_url
        with environment.task_environment(self.log):
            pipelines = [declare.load(name) for name in self.pipeline_names]
            self.requests = [
                RunRequest(p.name, in_use(p.name, self.root, p.source.table), run_id=self.run_id, link=link)
                for p in pipelines
            ]
            self._application = Application.for_runs(self.name, pipelines, self.requests)
            if not self._application.needs_spark:  # no Spark application: each run here, in this process
                self.log.info("nothing new for any member: running them here, without Spark")
                for _ in execute_group([replace(r, start_spark=False) for r in self.requests]):
                    pass
            else:
                super().execute(context)
        return self._outcomes()

    def _outcomes(self) -> dict[str, Any]:
        from jobs.lake import fs
        from jobs.run.report import RunStatus, load_report, report_uri
        from jobs.validate.result import result_uri

        outcomes, rerun = {}, []
        with environment.task_environment(self.log):
            for request in self.requests:
                runs, name = request.locations.runs, request.pipeline
                if not fs.exists(report_uri(runs, self.run_id)):
                    outcomes[name] = {"status": "not run", "error": "the application ended first"}
                    rerun.append(name)
                    continue
                report = load_report(runs, self.run_id)
                results = result_uri(runs, self.run_id)
                validation = fs.read_json(results)["status"] if fs.exists(results) else None
                outcomes[name] = {
                    "status": report.status.value,
                    "validation": validation,
                    "error": report.error,
                }
                if (
                    report.status in (RunStatus.FAILED, RunStatus.REFUSED, RunStatus.STOPPED)
                    and not report.stopped_on_data
                ):
                    rerun.append(name)
        for name, outcome in outcomes.items():
            self.log.info("%s: %s", name, json.dumps(outcome))
        if rerun:
            self.log.warning("to run again on their own: %s", ", ".join(rerun))
        return {"run_id": self.run_id, "members": outcomes, "rerun": rerun}
