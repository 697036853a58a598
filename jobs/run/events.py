"""What a run says as it goes (jobs/launch/execute.py yields them): it started, a batch was
committed, its report was stored, and last how it finished: its status (succeeded, failed,
refused or stopped), its exit code (jobs/exit_codes.py), its error in one line, and its
validation when it was validated after it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from jobs.exit_codes import ExitCode
from jobs.request import TriggerKind
from jobs.run.report import RunStatus

if TYPE_CHECKING:
    from jobs.run.report import RunReport


# How a run ends early, as the runner raises it (jobs/run/runner.py); `Finished` says it to callers.
class RunFailed(RuntimeError):
    """The run started but did not finish; its report says why."""


class RunStoppedOnData(RunFailed):
    """A batch failed on its data (a `fail` rule, a record Spark cannot get past), as it
    will on every rerun; the error names the file and the command that gets past it."""


class RunRefused(RuntimeError):
    """The run did not start, so nothing changed."""


class RunRefusedDeclaration(RunRefused):
    """The run did not start: Spark's analyser found the declaration wrong (an expression's
    type), which a rerun cannot mend: a bad declaration, as when it loads (exit 2)."""


class RunStopped(RuntimeError):
    """The run was asked to stop (Ctrl-C or SIGTERM) and stopped cleanly."""


@dataclass(frozen=True)
class Started:
    pipeline: str
    run_id: str


@dataclass(frozen=True)
class BatchCommitted:
    pipeline: str
    batch_id: int
    input_rows: int
    output_rows: int


@dataclass(frozen=True)
class ReportStored:
    pipeline: str
    uri: str
    report: RunReport


@dataclass(frozen=True)
class Finished:
    pipeline: str
    status: RunStatus  # the run's
    code: ExitCode
    report: RunReport | None = None  # a succeeded run's
    validation: str | None = None  # passed, warned or failed; None when not validated
    error: str | None = None

    def validated(self, verdict: str) -> Finished:
        """With its validation's verdict: exit 4 when a `fail` expectation failed, but a run that
        used none stays exit 6 (its share check fails too: the more precise word is kept)."""
        failed = verdict == "failed" and self.code in (ExitCode.OK, ExitCode.ANOMALOUS, ExitCode.OWES)
        return replace(self, validation=verdict, code=ExitCode.INVALID if failed else self.code)

    @classmethod
    def ran(cls, report: RunReport) -> Finished:
        """A run that ended (`_ended_code`)."""
        return cls(report.pipeline, RunStatus.SUCCEEDED, _ended_code(report), report)

    def line(self, report_uri: str | None = None) -> str:
        """One line: how the run ended, what it read and wrote, its validation; an error in
        brief, whole in the run report at `report_uri`."""
        from jobs.run.messages import brief

        report = self.report
        if report is None:
            said = brief(self.error, report_uri) if self.error else self.code.meaning
            return f"{self.pipeline}: {self.status}, exit {int(self.code)}: {said}"
        read = f"{report.input_files} file(s), {report.input_rows} rows in" if report.batch_ids else "nothing new"
        written = f", {report.output_rows} rows written" if report.batch_ids else ""
        checked = f", validation {self.validation}" if self.validation else ""
        ended = report.used_none_said() if report.used_none else report.ended_said()
        why = f": {self.code.meaning}" if self.code == ExitCode.ANOMALOUS else ""  # succeeded, yet not 0
        return f"{self.pipeline}: {ended} in {report.duration_s}s, {read}{written}{checked}, exit {int(self.code)}{why}"


def reported_code(report: RunReport, validation: str | None = None) -> ExitCode:
    """The exit code a run's report (and its validation's verdict) says it ended with, as
    `Finished` has it: what another process reads of a run, rather than its exit status."""
    if report.status == RunStatus.REFUSED:
        return ExitCode.REFUSED
    if report.status == RunStatus.STOPPED:
        return ExitCode.OK if report.trigger.startswith(TriggerKind.PROCESSING_TIME) else ExitCode.STOPPED
    if report.status == RunStatus.FAILED:
        return ExitCode.DATA if report.stopped_on_data else ExitCode.FAILED
    if validation is None and report.not_validated:  # its validation did not finish: exit 1, as said
        return ExitCode.FAILED
    if report.used_none:  # its share check fails too: the more precise word is kept
        return ExitCode.UNUSED
    if validation == "failed":
        return ExitCode.INVALID
    return _ended_code(report)


def _ended_code(report: RunReport) -> ExitCode:
    """A run that ended, before its validation: exit 6 when it used none of its input, 8 when
    a metric was anomalous and the declaration fails on it, 7 when its table owes an
    upstream's rewrite (none a success), else 0."""
    if report.used_none:
        return ExitCode.UNUSED
    if report.anomalies and report.anomalies_fail:
        return ExitCode.ANOMALOUS
    return ExitCode.OWES if report.owed else ExitCode.OK


Event = Started | BatchCommitted | ReportStored | Finished
Emit = Callable[[Event], None]  # where a run says them
