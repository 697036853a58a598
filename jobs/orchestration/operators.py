"""spark-submit of `python -m jobs ...`, as Airflow tasks.

The master comes from the Spark connection (local[*] when there is none), so the same
DAG runs on a laptop and on a cluster. Arguments are a list handed to spark-submit
without a shell, each option as one `--name=value` element: a param can never become
another option or a shell command.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from jobs.exit_codes import ExitCode
from jobs.orchestration import environment
from jobs.run.arrivals import describe
from jobs.settings import package_file, settings

ENTRY_POINT = package_file("entry/spark_submit.py")
LOG4J_CONFIG = package_file("log4j2.properties")


def log_arrivals(context: Any, log: Any) -> None:
    """In a run the landing's Asset started: what each event said (the files may be more by now)."""
    for events in (context.get("triggering_asset_events") or {}).values():
        for event in events:
            payload = (event.extra or {}).get("payload")
            if isinstance(payload, dict) and "files" in payload:
                log.info("started by files landing at %s: %s", event.timestamp, describe(payload))


def submit_exit_code(operator: SparkSubmitOperator) -> int | None:
    """The exit code of the spark-submit an operator ran (None if it did not start one).

    The provider keeps it private (its hook's process); this is the one place that reads
    it, and tests/airflow/test_provider_contract.py fails when the provider changes it."""
    process = getattr(getattr(operator, "_hook", None), "_submit_sp", None)
    return None if process is None else process.returncode


def task_log_file(context: Any) -> Path:
    """<cache>/logs/airflow/<dag>/<run>/<task>.<try>.log: one file per task attempt."""
    ti = context["ti"]
    parts = [ti.dag_id, ti.run_id, f"{ti.task_id}.{ti.try_number}.log"]
    path = settings().cache_dir.resolve().joinpath("logs", "airflow", *(re.sub(r"[^\w.=-]", "_", p) for p in parts))
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


class JobsSubmitOperator(SparkSubmitOperator):
    """Runs `python -m jobs <jobs_args...>` through spark-submit. `skip_on_exit` lists exit
    codes that mean "nothing to do here" and skip the task."""

    template_fields = (*SparkSubmitOperator.template_fields, "jobs_args")

    def __init__(
        self,
        *,
        jobs_args: list[str],
        root: str | None = None,
        skip_on_exit: tuple[ExitCode, ...] = (),
        done_on_exit: tuple[ExitCode, ...] = (),
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("conn_id", settings().spark_conn_id)
        kwargs.setdefault("name", f"jobs-{kwargs['task_id']}")
        # The project's log settings from the JVM's start (Spark's INFO lines otherwise flood the task log),
        # and the pipeline's own sizes (its declaration's `spark:` block), if any.
        kwargs["conf"] = {
            "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()} "
            "-XX:+ExitOnOutOfMemoryError",
            **(kwargs.get("conf") or {}),
        }
        super().__init__(application=str(ENTRY_POINT), **kwargs)
        self.spark_conn_id: str = kwargs["conn_id"]  # the provider keeps its own copy private
        self.jobs_args = jobs_args
        # The pipelines the command works on, under `root`; None: the one the command line
        # names at run time (`maintain A`, `validate A`, `rebuild A`).
        self.pipeline_names: list[str] | None = None
        self.root = root
        self.skip_on_exit = skip_on_exit
        self.done_on_exit = done_on_exit  # the task succeeds: a later task reads what they mean
        self.exit_code: ExitCode | None = None

    def arguments(self, context: Any) -> list[str]:
        """The command line after `python -m jobs`; subclasses add to it at run time."""
        return [str(arg) for arg in self.jobs_args]

    def reported_code(self) -> ExitCode | None:
        """How the command ended, as what it stored says (a run's report), when it says; a
        sturdier contract than spark-submit's exit status, which the provider keeps private."""
        return None

    def spark_application(self, context: Any):
        """The Spark application the command starts (jobs/run/application.py): the
        pipelines it works on, where they are. Run tasks give their run requests' instead."""
        from jobs import declare
        from jobs.lake.builds import in_use
        from jobs.run.application import Application

        names = self.pipeline_names if self.pipeline_names is not None else self.application_args[1:2]
        declared = declare.load_each().pipelines
        pipelines = [declared[name] for name in names if name in declared]  # an unknown one: the command refuses it
        located = [in_use(p.name, self.root, p.source.table) for p in pipelines] if self.root else []
        return Application.for_command(self.name, pipelines, located)

    def submit_conf(self, application: Any, context: Any) -> dict[str, str]:
        """What spark-submit starts the application with: the application's settings, over
        the task's own (`conf`), and its JVM options after the project's log settings, with
        Spark's log (its stack traces) in a file of this task's own, which the run report names."""
        from jobs.session import merged_conf

        conf = merged_conf(self.conf or {}, application.conf())
        java_options = self.conf.get("spark.driver.extraJavaOptions", "")
        start = application.java_options()
        options = f"{java_options} -Djobs.log.file={task_log_file(context)} {start}"
        return {**conf, "spark.driver.extraJavaOptions": options}

    def execute(self, context: Any) -> Any:
        from jobs import jvm

        self.application_args = self.arguments(context)
        jvm.make_archive()  # a worker's first Spark task makes the class archive (once per JDK, Spark and Delta)
        with environment.task_environment(self.log, self.spark_conn_id):
            from jobs.session import driver_class_path

            self.conf = self.submit_conf(self.spark_application(context), context)
            try:
                with driver_class_path(self.conf):  # the lock's jars, as the executors have them
                    super().execute(context)
            except AirflowException as error:
                returned = submit_exit_code(self)
                reported = self.reported_code()  # what the command stored says, when it says how it failed
                code = reported if reported not in (None, ExitCode.OK) else ExitCode.of(returned)
                self.exit_code = code
                if code in self.done_on_exit:
                    return None
                if code in self.skip_on_exit:
                    raise AirflowSkipException(f"nothing to do: {code.meaning}") from error
                meaning = code.meaning if code else f"spark-submit exited with {returned}"
                failure = AirflowFailException if code and not code.worth_retrying else AirflowException
                raise failure(f"python -m jobs {self.application_args[0]}: {meaning}") from error
        return None


class ValidateTableOperator(JobsSubmitOperator):
    """`python -m jobs validate PIPELINE --all`, skipped without starting Spark while the
    pipeline has committed no batch (there is no table yet), and when no run has appended
    rows since the table's last check (unless the DAG run's param `revalidate` is set)."""

    def __init__(self, *, pipeline_name: str, root: str, **kwargs: Any) -> None:
        super().__init__(jobs_args=["validate", pipeline_name, f"--root={root}", "--all"], root=root, **kwargs)
        self.pipeline_name = pipeline_name

    def execute(self, context: Any) -> Any:
        from jobs.lake.builds import in_use
        from jobs.run.report import has_committed_batches, load_reports
        from jobs.validate.result import current_table_check, load_results

        with environment.task_environment(self.log):
            runs = in_use(self.pipeline_name, self.root).runs
            reports, results = load_reports(runs), load_results(runs)
        current = current_table_check(reports, results)
        why = None
        if not has_committed_batches(reports):
            why = f"nothing to validate yet: {self.pipeline_name} has committed no batch"
        elif current and not context["params"].get("revalidate"):
            why = f"unchanged: no run of {self.pipeline_name} appended rows since table check {current}"
        if why:
            self.log.info("%s", why)  # Airflow's own log of a skip says only "Skipping task."
            raise AirflowSkipException(why)
        return super().execute(context)


class BackfillStepOperator(JobsSubmitOperator):
    """One step of a backfill request (checked by the DAG's first task and passed as its XCom)."""

    def __init__(self, *, step: str, request_task: str = "check_params", **kwargs: Any) -> None:
        super().__init__(jobs_args=[], **kwargs)
        self.step = step
        self.request_task = request_task

    def _backfill(self, context: Any):
        """The request the DAG's first task checked, as its steps (read once per try)."""
        from jobs.backfill import BackfillRequest
        from jobs.backfill.steps import Backfill

        if getattr(self, "_read", None) is None:
            request = BackfillRequest.from_dict(context["ti"].xcom_pull(task_ids=self.request_task))
            self._read = Backfill.of(request, self.name)
        return self._read

    def arguments(self, context: Any) -> list[str]:
        return self._backfill(context).request.step_args(self.step)

    def spark_application(self, context: Any):
        """The backfill's (jobs/backfill/steps.py)."""
        return self._backfill(context).application()

    def execute(self, context: Any) -> Any:
        self._read = None  # a retry reads the request again
        if self.step not in self._backfill(context).steps:
            raise AirflowSkipException(f"not a step of this backfill: {self.step}")
        return super().execute(context)
