"""What `python -m jobs` exit codes mean, for the command line and the Airflow operators alike."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # success (validation passed, or only warned)
    FAILED = 1  # the run started and failed; its run report says why
    USAGE = 2  # bad usage, or a bad declaration or suite
    REFUSED = 3  # refused before changing anything, or nothing to validate
    INVALID = 4  # the output failed a `fail` expectation
    DATA = 5  # a batch stopped on its data, as it will on every rerun (a `fail` rule, a record Spark cannot get past)
    UNUSED = 6  # the run read rows and used none: all quarantined (committed and accounted: nothing to redo)
    OWES = 7  # a reader of a Delta table owes rows its upstream rewrote (committed and accounted; redo the range)
    ANOMALOUS = 8  # with `quality: {anomalies: fail}`: a metric outside its history's range (committed and accounted)
    STOPPED = 130  # stopped on request (Ctrl-C, SIGTERM)

    @classmethod
    def of(cls, code: int | None) -> ExitCode | None:
        """The exit code a process ended with, if it is one of ours."""
        return cls._value2member_map_.get(code)

    @classmethod
    def worst(cls, codes: list[ExitCode]) -> ExitCode:
        """The exit code of several runs together (a group): the worst of theirs."""
        order = [
            cls.STOPPED,
            cls.USAGE,
            cls.FAILED,
            cls.DATA,
            cls.INVALID,
            cls.UNUSED,
            cls.ANOMALOUS,
            cls.OWES,
            cls.REFUSED,
        ]
        return next((code for code in order if code in codes), cls.OK)

    @property
    def meaning(self) -> str:
        return _MEANINGS[self]

    @property
    def worth_retrying(self) -> bool:
        """Whether running the same command again can change the outcome."""
        return self not in (
            ExitCode.USAGE,
            ExitCode.INVALID,
            ExitCode.DATA,
            ExitCode.UNUSED,
            ExitCode.ANOMALOUS,
            ExitCode.OWES,
        )


_MEANINGS = {
    ExitCode.OK: "succeeded",
    ExitCode.FAILED: "the job failed; its run report and the lines above say why (a retry resumes from the checkpoint)",
    ExitCode.USAGE: "bad usage or a bad declaration; fix it, retrying will not help",
    ExitCode.REFUSED: (
        "refused: another run holds the checkpoint, the declaration changed incompatibly, or there is nothing to do"
    ),
    ExitCode.INVALID: "validation failed: a `fail` expectation failed (see the results above and the Data Docs)",
    ExitCode.DATA: (
        "a batch stopped on its data, as every rerun would: quarantine the file its error names "
        "(python -m jobs quarantine-file; Airflow: the DAG's quarantine_file param) or change the declaration"
    ),
    ExitCode.UNUSED: (
        "the run used none of its input: every row was quarantined (see the reason most were quarantined for); "
        "fix the declaration or what producers send: retrying will not help"
    ),
    ExitCode.OWES: (
        "the run's table owes rows its upstream rewrote (a backfill or a rebuild of the table it reads): its report "
        "says which versions; redo the range (python -m jobs backfill, or the upstream's with --with-downstream)"
    ),
    ExitCode.ANOMALOUS: (
        "a metric of the run fell outside what its history expects, and the declaration says `quality: "
        "{anomalies: fail}`: the run is committed and accounted; its report's anomalies say which, against which runs"
    ),
    ExitCode.STOPPED: "stopped before it finished; the next run resumes from the checkpoint",
}
