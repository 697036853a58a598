"""How a run ended, as the command line and the Airflow tasks report it: its status
(succeeded, failed, refused or stopped), its exit code (jobs/exit_codes.py) and its error
in one line; with its validation, when the run was validated after it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark.sql import SparkSession

from jobs.declare import PipelineBase
from jobs.exit_codes import ExitCode
from jobs.lake.layout import Locations
from jobs.run import runner
from jobs.run.context import RunOptions
from jobs.run.report import RunReport


@dataclass(frozen=True)
class Outcome:
    pipeline: str
    status: str  # the run's: succeeded, failed, refused or stopped
    code: ExitCode
    report: RunReport | None = None  # a succeeded run's
    validation: str | None = None  # passed, warned or failed; None when not validated
    error: str | None = None

    def validated(self, verdict: str) -> Outcome:
        """The outcome with its validation's verdict: exit 4 when a `fail` expectation failed."""
        return replace(self, validation=verdict, code=ExitCode.INVALID if verdict == "failed" else self.code)

    def line(self) -> str:
        """One line: how the run ended, what it read and wrote, its validation."""
        report = self.report
        if report is None:
            return f"{self.pipeline}: {self.status}, exit {int(self.code)}: {self.error or self.code.meaning}"
        read = f"{report.input_files} file(s), {report.input_rows} rows in" if report.batch_ids else "nothing new"
        written = f", {report.output_rows} rows written" if report.batch_ids else ""
        checked = f", validation {self.validation}" if self.validation else ""
        return f"{self.pipeline}: succeeded in {report.duration_s}s, {read}{written}{checked}, exit {int(self.code)}"


def run_outcome(
    pipeline: PipelineBase, locations: Locations, options: RunOptions, spark: SparkSession | None = None
) -> Outcome:
    """Run the pipeline once (jobs/run/runner.py); how it ended, whatever ended it."""
    name = pipeline.name
    try:
        report = runner.run(pipeline, locations, options, spark=spark)
    except runner.RunRefused as error:
        return Outcome(name, "refused", ExitCode.REFUSED, error=str(error))
    except runner.RunStopped:
        code = ExitCode.OK if options.trigger.kind == "processing-time" else ExitCode.STOPPED
        return Outcome(name, "stopped", code, error="stopped on request")
    except runner.RunStoppedOnData as error:
        return Outcome(name, "failed", ExitCode.DATA, error=f"run failed: {error}")
    except runner.RunFailed as error:
        return Outcome(name, "failed", ExitCode.FAILED, error=f"run failed: {error}")
    return Outcome(name, "succeeded", ExitCode.OK, report)
