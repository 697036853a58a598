"""spark-submit of `python -m jobs <command>`, as Airflow tasks.

The master comes from the Spark connection (local[*] when there is none), so the same
DAG runs on a laptop and on a cluster. Arguments are a list handed to spark-submit
without a shell, each option as one `--name=value` element: a param can never become
another option or a shell command.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from jobs.orchestration import environment

ENTRY_POINT = environment.REPO / "jobs" / "spark_submit.py"
LOG4J_CONFIG = environment.REPO / "infra" / "spark" / "log4j2.properties"

# What `python -m jobs` exit codes mean to a task (see jobs/__main__.py).
EXIT_MEANINGS = {
    1: "the job failed; its report and the lines above say why (a retry resumes from the checkpoint)",
    2: "bad usage or a bad declaration; fix it, retrying will not help",
    3: "refused: another run holds the checkpoint, the declaration changed incompatibly, or there is nothing to do",
    4: "validation failed: a `fail` expectation failed (see the results above and the Data Docs)",
    130: "stopped before it finished; the next run resumes from the checkpoint",
}
NO_RETRY = (2, 4)  # retrying cannot change the outcome


class JobsSubmitOperator(SparkSubmitOperator):
    """Runs `python -m jobs <jobs_args...>` through spark-submit.

    `skip_on_exit` lists exit codes that mean "nothing to do here" and skip the task.
    """

    template_fields = (*SparkSubmitOperator.template_fields, "jobs_args")

    def __init__(self, *, jobs_args: list[str], skip_on_exit: tuple[int, ...] = (), **kwargs: Any) -> None:
        kwargs.setdefault("conn_id", environment.spark_conn_id())
        kwargs.setdefault("name", f"jobs-{kwargs['task_id']}")
        # The project's log settings from the JVM's start (Spark's INFO lines otherwise flood the task log).
        kwargs.setdefault(
            "conf", {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"}
        )
        super().__init__(application=str(ENTRY_POINT), **kwargs)
        self.jobs_args = jobs_args
        self.skip_on_exit = skip_on_exit

    def arguments(self, context: Any) -> list[str]:
        """The command line after `python -m jobs`; subclasses add to it at run time."""
        return [str(arg) for arg in self.jobs_args]

    def execute(self, context: Any) -> Any:
        self.application_args = self.arguments(context)
        environment.ensure_spark_connection(self._conn_id, self.log)
        with environment.task_environment(self.log):
            if any("s3a://" in arg or "s3://" in arg for arg in self.application_args):
                from jobs import s3

                # hadoop-aws on the classpath from the JVM's start; s3a settings hold no secret.
                self.conf = {**s3.spark_conf(), **(self.conf or {})}
            try:
                super().execute(context)
            except AirflowException as error:
                process = getattr(self._hook, "_submit_sp", None)
                code = process.returncode if process is not None else None
                if code in self.skip_on_exit:
                    raise AirflowSkipException(f"nothing to do: {EXIT_MEANINGS.get(code, code)}") from error
                meaning = EXIT_MEANINGS.get(code, f"spark-submit exited with {code}")
                failure = AirflowFailException if code in NO_RETRY else AirflowException
                raise failure(f"python -m jobs {self.application_args[0]}: {meaning}") from error
        return None


class RunPipelineOperator(JobsSubmitOperator):
    """`python -m jobs run PIPELINE` with a run id chosen here, returned as the task's XCom,
    so the tasks after it find this run's report. Rate limits come from the DAG run's params."""

    def __init__(self, *, pipeline: str, root: str, **kwargs: Any) -> None:
        # Validation is the DAG's next task, so the run does not validate on its own.
        super().__init__(jobs_args=["run", pipeline, f"--root={root}", "--no-validate"], **kwargs)

    def arguments(self, context: Any) -> list[str]:
        from jobs.report import new_run_id

        self.run_id = new_run_id(datetime.now(UTC))
        args = [*super().arguments(context), f"--run-id={self.run_id}"]
        params = context["params"]
        if params.get("max_files_per_trigger"):
            args.append(f"--max-files-per-trigger={int(params['max_files_per_trigger'])}")
        if params.get("max_bytes_per_trigger"):
            args.append(f"--max-bytes-per-trigger={params['max_bytes_per_trigger']}")
        return args

    def execute(self, context: Any) -> str:
        super().execute(context)
        return self.run_id


class BackfillStepOperator(JobsSubmitOperator):
    """One step of a backfill plan (checked by the DAG's first task and passed as its XCom)."""

    def __init__(self, *, step: str, plan_task: str = "check_params", **kwargs: Any) -> None:
        super().__init__(jobs_args=[], **kwargs)
        self.step = step
        self.plan_task = plan_task

    def arguments(self, context: Any) -> list[str]:
        from jobs.backfill import BackfillPlan

        plan = BackfillPlan.from_dict(context["ti"].xcom_pull(task_ids=self.plan_task))
        return plan.reprocess_args() if self.step == "reprocess" else plan.validate_args()
