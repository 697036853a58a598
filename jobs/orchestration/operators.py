"""spark-submit of `python -m jobs ...`, as Airflow tasks.

The master comes from the Spark connection (local[*] when there is none), so the same
DAG runs on a laptop and on a cluster. Arguments are a list handed to spark-submit
without a shell, each option as one `--name=value` element: a param can never become
another option or a shell command.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from jobs.exit_codes import ExitCode
from jobs.orchestration import arrival, environment
from jobs.settings import package_file, settings
from jobs.units import new_run_id

ENTRY_POINT = package_file("entry/spark_submit.py")
LOG4J_CONFIG = package_file("log4j2.properties")


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


def table_formats(args: list[str]) -> set[str]:
    """The table formats of the declared pipelines a command line names (`run A B`, `validate A`)."""
    from jobs import declare

    declared = declare.load_each()
    return {declared.pipelines[name].output.format for name in args[1:] if name in declared.pipelines}


class JobsSubmitOperator(SparkSubmitOperator):
    """Runs `python -m jobs <jobs_args...>` through spark-submit. `skip_on_exit` lists exit
    codes that mean "nothing to do here" and skip the task."""

    template_fields = (*SparkSubmitOperator.template_fields, "jobs_args")

    def __init__(
        self,
        *,
        jobs_args: list[str],
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
        self.skip_on_exit = skip_on_exit
        self.done_on_exit = done_on_exit  # the task succeeds: a later task reads what they mean
        self.exit_code: ExitCode | None = None

    def arguments(self, context: Any) -> list[str]:
        """The command line after `python -m jobs`; subclasses add to it at run time."""
        return [str(arg) for arg in self.jobs_args]

    # How much new input the application reads, when the task knows (jobs/jvm/archive.py: a lean start).
    new_bytes: int | None = None

    def execute(self, context: Any) -> Any:
        from jobs import jvm

        self.application_args = self.arguments(context)
        jvm.make_archive()  # a worker's first Spark task makes the class archive (once per JDK and Spark)
        # Spark's log (its stack traces) in a file of this task's own, which the run report names.
        java_options = self.conf.get("spark.driver.extraJavaOptions", "")
        start = jvm.start_options(self.new_bytes)
        self.conf = {
            **self.conf,
            "spark.driver.extraJavaOptions": f"{java_options} -Djobs.log.file={task_log_file(context)} {start}",
        }
        with environment.task_environment(self.log, self.spark_conn_id):
            from jobs.session import merged_conf, s3a_conf, table_conf, with_product_jar

            if any("s3a://" in arg or "s3://" in arg for arg in self.application_args):
                # hadoop-aws on the classpath from the JVM's start; s3a settings hold no secret.
                self.conf = merged_conf(s3a_conf(), self.conf or {})
            # Delta's jars, SQL extension and catalog from the JVM's start, if a table is Delta.
            self.conf = merged_conf(self.conf, table_conf(table_formats(self.application_args)))
            # The product's jar (its decoder and counter) on the driver's class path from its start.
            self.conf = {**self.conf, "spark.jars": with_product_jar(self.conf.get("spark.jars"))}
            try:
                super().execute(context)
            except AirflowException as error:
                returned = submit_exit_code(self)
                code = ExitCode.of(returned)
                self.exit_code = code
                if code in self.done_on_exit:
                    return None
                if code in self.skip_on_exit:
                    raise AirflowSkipException(f"nothing to do: {code.meaning}") from error
                meaning = code.meaning if code else f"spark-submit exited with {returned}"
                failure = AirflowFailException if code and not code.worth_retrying else AirflowException
                raise failure(f"python -m jobs {self.application_args[0]}: {meaning}") from error
        return None


class RunPipelineOperator(JobsSubmitOperator):
    """`python -m jobs run PIPELINE` with a run id chosen here, returned as the task's XCom,
    so the tasks after it find this run's report. Rate limits come from the DAG run's params.

    `validate`: the run validates its output in its own application (a failed validation
    is for a later task to report); otherwise the DAG's next task validates it.
    `group_task`: a rerun of a group's member; its run id follows the group run's."""

    def __init__(
        self, *, pipeline_name: str, root: str, validate: bool = False, group_task: str | None = None, **kwargs: Any
    ) -> None:
        if group_task:  # mapped over the members to rerun: named and sized at run time
            from jobs import declare

            kwargs.setdefault("name", f"jobs-{pipeline_name}")
            kwargs.setdefault("conf", declare.load(pipeline_name).spark_settings.session_conf())
        args = ["run", pipeline_name, f"--root={root}", *([] if validate else ["--no-validate"])]
        super().__init__(jobs_args=args, done_on_exit=(ExitCode.INVALID,) if validate else (), **kwargs)
        self.pipeline_name = pipeline_name
        self.root = root
        self.group_task = group_task

    def arguments(self, context: Any) -> list[str]:
        args = [*super().arguments(context), f"--run-id={self.run_id}", f"--link={context['ti'].log_url}"]
        params = context["params"]
        if params.get("max_files_per_trigger"):
            args.append(f"--max-files-per-trigger={int(params['max_files_per_trigger'])}")
        if params.get("max_bytes_per_trigger"):
            args.append(f"--max-bytes-per-trigger={params['max_bytes_per_trigger']}")
        if params.get("quarantine_file"):  # the way past a batch that fails on its data
            args += [
                f"--quarantine-file={params['quarantine_file']}",
                f"--quarantine-reason={params['quarantine_reason']}",
            ]
        return args

    def execute(self, context: Any) -> str:
        arrival.log_arrivals(context, self.log)
        self.run_id = new_run_id(datetime.now(UTC))
        if self.group_task:
            group_run = context["ti"].xcom_pull(task_ids=self.group_task)["run_id"]
            self.run_id = f"{group_run}.r{context['ti'].try_number}"
        if self._ran_without_spark(context):
            return self.run_id
        try:
            super().execute(context)
        except AirflowSkipException:
            raise
        except AirflowException as error:  # the run's one-line error (a rule's, a poison file's), not a trace
            why = self._run_error()
            raise type(error)(f"{error}: {why}" if why else str(error)) from error
        return self.run_id

    def _ran_without_spark(self, context: Any) -> bool:
        """A run with nothing new needs no Spark application: it runs here, in the task's own
        process, and its report is stored as any run's. Otherwise how much is new (a small
        increment starts lean) and False."""
        from jobs import declare
        from jobs.lake.builds import in_use
        from jobs.launch import Member, run_and_validate
        from jobs.run.context import RunOptions
        from jobs.run.pending import pending_input
        from jobs.validate.suite import load_suite

        if context["params"].get("quarantine_file"):
            return False
        pipeline = declare.load(self.pipeline_name)
        options = RunOptions(run_id=self.run_id, link=context["ti"].log_url, start_spark=False)
        with environment.task_environment(self.log):
            member = Member(
                pipeline,
                in_use(self.pipeline_name, self.root),  # the build a rebuild switched to, if any
                load_suite(pipeline) if "--no-validate" not in self.jobs_args else None,
            )
            pending = pending_input(pipeline, member.locations, options)
            self.new_bytes = None if pending.needs_spark else pending.bytes
            if not pending.nothing_new:
                self.log.info("%s: %s: running it with spark-submit", self.pipeline_name, pending.describe())
                return False
            outcome = run_and_validate(member, options)
        if outcome.code == ExitCode.REFUSED:
            raise AirflowException(f"python -m jobs run: {ExitCode.REFUSED.meaning}: {outcome.error}")
        if outcome.error:
            raise AirflowException(f"python -m jobs run: {outcome.error}")
        return True

    def _run_error(self) -> str | None:
        from jobs.lake.builds import in_use
        from jobs.run.report import load_report

        try:
            with environment.task_environment(self.log):
                return load_report(in_use(self.pipeline_name, self.root).runs, self.run_id).error
        except Exception:  # noqa: BLE001 - no report (the run never started): the exit code says enough
            return None


class GroupRunOperator(JobsSubmitOperator):
    """`python -m jobs run A B C` in one Spark application, each member validated in it.

    Succeeds whatever a member's run did (a member's outcome is read from its run report
    and validation result): returns the run id, each member's outcome and the members to
    run again on their own (their run failed in a way a rerun can change, was refused or
    stopped, or never ran). A member stopped on its data, or whose output failed
    validation, is not run again: a rerun would end the same."""

    def __init__(self, *, pipeline_names: list[str], root: str, **kwargs: Any) -> None:
        super().__init__(
            jobs_args=["run", *pipeline_names, f"--root={root}"],
            done_on_exit=tuple(code for code in ExitCode if code != ExitCode.USAGE),
            **kwargs,
        )
        self.pipeline_names = pipeline_names
        self.root = root

    def arguments(self, context: Any) -> list[str]:
        return [*super().arguments(context), f"--run-id={self.run_id}", f"--link={context['ti'].log_url}"]

    def execute(self, context: Any) -> dict[str, Any]:
        from jobs import declare
        from jobs.lake.builds import in_use
        from jobs.launch import Member, run_group
        from jobs.run.context import RunOptions
        from jobs.run.pending import pending_input
        from jobs.validate.suite import load_suite

        arrival.log_arrivals(context, self.log)
        self.run_id = new_run_id(datetime.now(UTC))
        pipelines = [declare.load(name) for name in self.pipeline_names]
        options = RunOptions(run_id=self.run_id, link=context["ti"].log_url, start_spark=False)
        with environment.task_environment(self.log):
            members = [Member(p, in_use(p.name, self.root), load_suite(p)) for p in pipelines]
            pending = [pending_input(m.pipeline, m.locations, options) for m in members]
            if all(p.nothing_new for p in pending):  # no Spark application: each run here, in this process
                self.log.info("nothing new for any member: running them here, without Spark")
                run_group(members, options)
            else:
                known = not any(p.needs_spark for p in pending)
                self.new_bytes = sum(p.bytes for p in pending) if known else None
                super().execute(context)
        return self._outcomes(members)

    def _outcomes(self, members: list) -> dict[str, Any]:
        from jobs.lake import fs
        from jobs.run.report import load_report, report_uri
        from jobs.validate.result import result_uri

        outcomes, rerun = {}, []
        with environment.task_environment(self.log):
            for member in members:
                runs = member.locations.runs
                if not fs.exists(report_uri(runs, self.run_id)):
                    outcomes[member.pipeline.name] = {"status": "not run", "error": "the application ended first"}
                    rerun.append(member.pipeline.name)
                    continue
                report = load_report(runs, self.run_id)
                results = result_uri(runs, self.run_id)
                validation = fs.read_json(results)["status"] if fs.exists(results) else None
                outcomes[member.pipeline.name] = {
                    "status": report.status,
                    "validation": validation,
                    "error": report.error,
                }
                if report.status in ("failed", "refused", "stopped") and not report.stopped_on_data:
                    rerun.append(member.pipeline.name)
        for name, outcome in outcomes.items():
            self.log.info("%s: %s", name, json.dumps(outcome))
        if rerun:
            self.log.warning("to run again on their own: %s", ", ".join(rerun))
        return {"run_id": self.run_id, "members": outcomes, "rerun": rerun}


class ValidateTableOperator(JobsSubmitOperator):
    """`python -m jobs validate PIPELINE --all`, skipped without starting Spark while the
    pipeline has committed no batch (there is no table yet), and when no run has appended
    rows since the table's last check (unless the DAG run's param `revalidate` is set)."""

    def __init__(self, *, pipeline_name: str, root: str, **kwargs: Any) -> None:
        super().__init__(jobs_args=["validate", pipeline_name, f"--root={root}", "--all"], **kwargs)
        self.pipeline_name = pipeline_name
        self.root = root

    def execute(self, context: Any) -> Any:
        from jobs.lake.builds import in_use
        from jobs.run.report import has_committed_batches, load_reports
        from jobs.validate.result import current_table_check, load_results

        with environment.task_environment(self.log):
            runs = in_use(self.pipeline_name, self.root).runs
            reports, results = load_reports(runs), load_results(runs)
        current = current_table_check(reports, results)
        if not has_committed_batches(reports):
            raise AirflowSkipException(f"nothing to validate yet: {self.pipeline_name} has committed no batch")
        if current and not context["params"].get("revalidate"):
            raise AirflowSkipException(
                f"unchanged: no run of {self.pipeline_name} appended rows since table check {current}"
            )
        return super().execute(context)


class BackfillStepOperator(JobsSubmitOperator):
    """One step of a backfill plan (checked by the DAG's first task and passed as its XCom)."""

    def __init__(self, *, step: str, plan_task: str = "check_params", **kwargs: Any) -> None:
        super().__init__(jobs_args=[], **kwargs)
        self.step = step
        self.plan_task = plan_task

    def _plan(self, context: Any):
        from jobs.backfill import BackfillPlan

        return BackfillPlan.from_dict(context["ti"].xcom_pull(task_ids=self.plan_task))

    def arguments(self, context: Any) -> list[str]:
        return self._plan(context).step_args(self.step)

    def execute(self, context: Any) -> Any:
        if self.step == "replace" and not self._plan(context).into_table:
            raise AirflowSkipException("the plan publishes a copy: nothing to replace in the production table")
        return super().execute(context)
