"""A backfill's steps, in the one order the command line and the Airflow DAG both follow:

    reprocess   the range into the backfill's own work root and checkpoint, then every row
                of it staged, what state still holds included (stage.py)
    validate    the staged result, with the pipeline's suite; a failed `fail` check stops here
    publish     a copy: <publish_to>/_CURRENT.json pointed at it (versions.py), no Spark
  | replace     a Delta table: the range written over the production table's (replace.py)

`python -m jobs backfill` runs them one after another in one process; the DAG runs each as a
task (`python -m jobs backfill ... --step=STEP` through spark-submit; publish in the worker,
for its Asset event). A step that does not succeed raises `StepFailed` with the exit code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from jobs import declare
from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from jobs.backfill.request import BackfillRequest
    from jobs.run.application import Application


class Step(StrEnum):
    REPROCESS = "reprocess"
    VALIDATE = "validate"
    PUBLISH = "publish"
    REPLACE = "replace"


class StepFailed(Exception):
    """A step did not succeed: its exit code, and what to say (None: said already)."""

    def __init__(self, code: ExitCode, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Validated:
    status: str  # passed or warned: a failed validation raises StepFailed
    results: str  # where the results are

    def said(self) -> str:
        return f"validation {self.status}: {self.results}"


@dataclass
class Backfill:
    """One backfill request's steps, with the Spark application they share (started when a
    step first needs it)."""

    request: BackfillRequest
    pipeline: declare.PipelineBase
    production: Locations | None  # the Delta table whose range it replaces; None: it publishes a copy
    name: str  # the Spark application's
    _spark: SparkSession | None = field(default=None, repr=False)

    @classmethod
    def of(cls, request: BackfillRequest, name: str | None = None) -> Backfill:
        from jobs.lake.builds import in_use

        production = in_use(request.pipeline, request.root, request.upstream) if request.into_table else None
        return cls(request, declare.load(request.pipeline), production, name or f"jobs-backfill-{request.pipeline}")

    @property
    def steps(self) -> tuple[Step, ...]:
        return (Step.REPROCESS, Step.VALIDATE, Step.REPLACE if self.production is not None else Step.PUBLISH)

    def application(self) -> Application:
        """Its work root, the production table it replaces a range of, where it publishes."""
        from jobs.run.application import Application

        located = [self.request.locations, *([self.production] if self.production is not None else [])]
        return Application.for_command(self.name, [self.pipeline], located, [self.request.publish_to])

    def check(self) -> None:
        """Before any Spark work: a range replaced in the production table can be (BackfillError)."""
        if self.production is not None:
            from jobs.backfill.replace import refuse_unless_replaceable

            refuse_unless_replaceable(self.pipeline, self.request, self.production)

    def run(self, step: Step):
        """Run one step: Staged, Validated, Published or Replaced (said with `said()`)."""
        if step not in self.steps:
            order = " -> ".join(self.steps)
            raise StepFailed(ExitCode.USAGE, f"{step} is not a step of this backfill: its steps are {order}")
        return {
            Step.REPROCESS: self._reprocess,
            Step.VALIDATE: self._validate,
            Step.PUBLISH: self._publish,
            Step.REPLACE: self._replace,
        }[step]()

    def _session(self) -> SparkSession:
        if self._spark is None:
            self._spark = self.application().session()
        return self._spark

    def _reprocess(self):
        from jobs.backfill.readers import take_input
        from jobs.backfill.stage import reprocess, stage_closed_range

        if self.request.upstream is not None:  # a reader: its upstream's rows of the range
            take_input(self._session(), self.pipeline, self.request)
        finished = reprocess(self.request, self.pipeline)
        if finished.code == ExitCode.STOPPED:
            raise StepFailed(finished.code, None)
        if finished.code == ExitCode.REFUSED:
            raise StepFailed(finished.code, finished.error)
        if finished.code != ExitCode.OK:
            raise StepFailed(finished.code, f"backfill {finished.error}")
        return stage_closed_range(self._session(), self.pipeline, self.request.locations, self.request.stage)

    def _staged(self) -> None:
        """Refuse a step that reads the staged result before the reprocess step completed it."""
        from jobs.backfill.versions import is_staged

        stage = self.request.stage
        if not is_staged(stage):
            raise StepFailed(
                ExitCode.REFUSED, f"{stage} is not a complete staged result: run the step {Step.REPROCESS} first"
            )

    def _validate(self) -> Validated:
        from jobs.validate.result import result_uri
        from jobs.validate.suite import load_suite
        from jobs.validate.validation import validate_table

        self._staged()
        staged = Locations.resolve(self.pipeline.name, root=self.request.work_root, output=self.request.stage)
        result = validate_table(self._session(), self.pipeline, staged, load_suite(self.pipeline))
        if result.status == "failed":
            raise StepFailed(
                ExitCode.INVALID, f"the staged result failed validation; not published ({self.request.stage})"
            )
        return Validated(result.status, result_uri(staged.runs, result.validation_id))

    def _publish(self):
        from jobs.backfill.versions import publish

        published = publish(self.request)
        self._redone()
        return published

    def _redone(self) -> None:
        """A reader's range redone: what it owed of its upstream's rewrites there is paid."""
        if self.request.upstream is not None:
            from jobs.backfill.readers import record_redone

            record_redone(self.pipeline, self.request)

    def _replace(self):
        from jobs.backfill.replace import replace_range
        from jobs.lake.locks import AlreadyRunning

        self._staged()
        try:
            replaced = replace_range(self._session(), self.pipeline, self.request, self.production)
        except AlreadyRunning as error:
            raise StepFailed(
                ExitCode.REFUSED, f"{error}; the staged range is kept: run again with --step={Step.REPLACE}"
            ) from None
        self._redone()
        return replaced
