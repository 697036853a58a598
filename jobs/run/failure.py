"""Why a run failed, in one line: the root cause a user can act on, found in the error,
its causes and the JVM's stack trace; the trace itself stays in Spark's log."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import unquote

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import IncompatibleCheckpoint
from jobs.declare import PipelineBase
from jobs.declare.code import fingerprint
from jobs.declare.rules import RULE_FAILED
from jobs.flow.conditions import spark_conditions
from jobs.lake.faults import root_cause
from jobs.lake.layout import StorageError, from_spark
from jobs.run.report import RunReport
from jobs.units import jobs_command, printable


def one_line(error: BaseException) -> str:
    """The first line of an error, whole (advice is never cut), without a JVM stack trace."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0].strip()


def whole_text(error: BaseException | None) -> str:
    """An error with its causes and, for a JVM error, its Java stack trace ("Caused by: ...")."""
    parts, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        parts += [str(error), str(getattr(error, "_stackTrace", "") or "")]
        error = getattr(error, "_cause", None) or error.__cause__
    return "\n".join(parts)


def _jvm_death(error: BaseException, checkpoint_log: CheckpointLog, report: RunReport) -> str | None:
    """What to tell a user whose run lost its JVM (py4j then only says "Connection refused")."""
    from py4j.protocol import Py4JError, Py4JNetworkError

    from jobs.session import OUT_OF_MEMORY_EXITS, dead_jvm_exit_code

    causes, seen = [], error
    while seen is not None and len(causes) < 20:
        causes.append(seen)
        seen = seen.__cause__ or seen.__context__
    # py4j's errors without a Java exception: the connection broke, or the call's answer was
    # lost with it ("An error occurred while calling o253.recentProgress").
    lost = Py4JNetworkError | ConnectionRefusedError | ConnectionResetError
    if not any(isinstance(e, lost) or type(e) is Py4JError for e in causes):
        return None  # an error the JVM reported (an S3 endpoint refusing is one): the JVM is alive
    text = whole_text(error)
    code = dead_jvm_exit_code()
    try:
        batch = checkpoint_log.batch_in_flight()
    except (OSError, StorageError):
        batch = None  # the storage is what failed
    where = f" in batch {batch}" if batch is not None else ""
    then = f"; the next run redoes batch {batch} with the same files" if batch is not None else ""
    if code in OUT_OF_MEMORY_EXITS or "OutOfMemoryError" in text:
        limits = report.batch_limits or {}
        now = (
            f" (this run: at most {limits['max_files']} files per batch)"
            if limits.get("max_files")
            else f" (this run: about {limits['max_bytes'] / 2**20:,.0f} MiB per batch{_sized(limits)})"
            if limits.get("max_bytes")
            else ""
        )
        more_memory = "give the driver more memory (the declaration's spark: driver_memory, e.g. 2g)"
        smaller = f"lower --max-bytes-per-trigger{now}"
        if batch is None:
            return f"the Spark driver ran out of memory: {smaller}, or {more_memory}"
        return f"the Spark driver ran out of memory{where}: {more_memory}{then}; {smaller} for the batches after it"
    if code is not None:
        return f"the Spark JVM died{where} (exit code {code}; Spark's log says why){then}"
    return f"the Spark JVM stopped answering{where} (it died, most often out of memory: see Spark's log){then}"


def _sized(limits: dict) -> str:
    """The most a sized batch could take (jobs/flow/admission.py), when the run sized them."""
    cap = limits.get("sized_cap")
    return f", sized up to {cap * limits.get('inflation', 1.0) / 2**20:,.0f} MiB after the first" if cap else ""


# Errors a record's values cause, by Spark's error condition: SQLSTATE class 22 is "data
# exception" (overflow, a cast, a date out of range); a raise_error of the flow (a
# declaration's `fail`), and an exception in a Python worker (the decoder, a processor),
# unless it is the worker's environment that failed (a missing module, memory, I/O), or a
# team's processor whatever the rows (jobs/flow/guard.py ProcessorCodeError).
_DATA_CONDITIONS = ("USER_RAISED_EXCEPTION", "PYTHON_EXCEPTION")
_ENVIRONMENT = re.compile(
    r"^(ImportError|ModuleNotFoundError|MemoryError|OSError|\w*ConnectionError|EOFError|[\w.]*ProcessorCodeError)\b",
    re.M,
)


def data_condition(error: BaseException) -> tuple[str, str] | None:
    """(condition, its message) of the first error in the JVM's chain of causes that a
    record's data caused; None when none did (a storage, memory or JVM failure)."""
    for condition in spark_conditions(error):
        if condition.name == "PYTHON_EXCEPTION" and _ENVIRONMENT.search(condition.message):
            return None
        if condition.name in _DATA_CONDITIONS or condition.sql_state.startswith("22"):
            return condition.name, condition.message
    return None


def _where(files: list[str], command: Callable[[str], str]) -> tuple[str, str]:
    """Which file a batch failed reading, and the command that quarantines it (when one)."""
    if len(files) == 1:
        return f"reading {printable(files[0])} (line unknown)", command(files[0])
    if files:
        shown = ", ".join(printable(file) for file in files[:3]) + (" ..." if len(files) > 3 else "")
        return f"reading one of {len(files)} files ({shown})", command("FILE")
    return "reading its files", command("FILE")


def _data_failure(error: BaseException, checkpoint_log: CheckpointLog, report: RunReport) -> str | None:
    """What to tell a user whose batch fails on a record every time it is redone: where
    it was reading, the error, and the command that gets past it."""
    found = data_condition(error)
    if found is None:
        return None
    condition, message = found
    batch = checkpoint_log.batch_in_flight()
    read = sorted({p for s in range(2) for p in _files_of(checkpoint_log, batch, s)}) if batch is not None else []
    files = [
        p for p in read if p in message or p in unquote(message)
    ] or read  # the error says which (as a %-encoded URI)

    def command(file: str) -> str:
        return jobs_command(
            "quarantine-file", report.pipeline, file, "--checkpoint", checkpoint_log.checkpoint, "--reason", _REASON
        )

    at = f"batch {batch}" if batch is not None else "a batch"
    broken = rule_failure(message)
    if broken:  # a `fail` rule named the rule, the file and the line
        return (
            f"{at} stopped: {RULE_FAILED} '{broken.rule}' (on_violation: fail): {printable(broken.file)} line {broken.line}"
            f"{broken.says}; nothing of the batch is committed and every rerun stops there: to get past it, "
            f"quarantine the file: {command(broken.file)} (Airflow: the DAG's quarantine_file "
            "param), or change the rule's on_violation, then run again"
        )
    read_failed = _READ_FAILED.search(message)
    if read_failed:  # the decoder named the file
        files, cause = [from_spark(read_failed.group(1))], read_failed.group(2)
    elif condition == "PYTHON_EXCEPTION":  # a Python traceback: its last line is the exception
        cause = [line for line in message.splitlines() if line.strip() and not line.startswith(" ")][-1]
    else:
        cause = one_line(RuntimeError(message))
    where, command = _where(files, command)
    return (
        f"{at} failed on its data, {where}: {condition}: {cause}; every rerun redoes it, so to get past it "
        f"quarantine the file: {command} (Airflow: the DAG's quarantine_file param), then run again"
    )


_REASON = "why it is set aside"  # what a pasted command records, unless edited


class RuleFailure(NamedTuple):
    """A record a `fail` rule stopped its batch on (jobs/flow/rules.py)."""

    rule: str
    file: str
    line: str  # its number, in the part of the file Spark read when that does not start the file
    says: str  # ": <check> is false for <values>"


def rule_failure(message: str) -> RuleFailure | None:
    """The rule, file and line a run's error or a `fail` rule's error names; None: it names none."""
    found = _RULE_FAILED.search(message)
    if found is None:
        return None
    return RuleFailure(found.group(1), from_spark(found.group(2)), found.group(3), found.group(4))


_RULE_FAILED = re.compile(
    RULE_FAILED + r" '(\w+)' \(on_violation: fail\): (.+?) line (\d+)(.*?)(?: SQLSTATE: \w+)?$", re.M
)
_READ_FAILED = re.compile(r"ReadFailed: reading (\S+)(?: \(and \d+ more\))?: (.*)")


def _files_of(checkpoint_log: CheckpointLog, batch: int, source: int) -> list[str]:
    try:
        return checkpoint_log.source_files(batch, source)
    except (OSError, StorageError, IndexError, ValueError):
        return []


_PROCESSOR_CODE = re.compile(r"ProcessorCodeError: (.*)")  # jobs/flow/guard.py
# Spark's refusal of a state whose key or value now has another shape than the checkpoint's.
_STATE_SHAPE = re.compile(r"\[(STATE_STORE_(?:KEY|VALUE)_SCHEMA_NOT_COMPATIBLE)\][^\n]*")


def state_reshaped(error: BaseException, pipeline: PipelineBase) -> IncompatibleCheckpoint | None:
    """A query that stopped because the state it keeps changed shape (a processor of the team's
    own whose code now keeps other state): the checkpoint cannot resume, a rebuild can."""
    found = _STATE_SHAPE.search(whole_text(error))
    if found is None:
        return None
    process = getattr(pipeline, "process", None)
    code = f"processor {process.processor!r} ({fingerprint(process.processor)})" if process else "the query"
    rebuild = jobs_command("rebuild", pipeline.name)
    return IncompatibleCheckpoint(
        f"{code} keeps its state in another shape than the checkpoint holds ({found.group(0).strip()}): "
        f"the checkpoint cannot resume under it; to make the table again with it: {rebuild} (docs/changes.md), "
        "or put back the code the checkpoint was written with"
    )


def failure_cause(error: BaseException, checkpoint_log: CheckpointLog, report: RunReport, uses_s3: bool) -> str:
    """The one line a failed run reports: the root cause first when one is known."""
    data = _data_failure(error, checkpoint_log, report)
    if data:
        return data
    code = _PROCESSOR_CODE.search(whole_text(error))
    if code:  # a team's processor, whatever the rows: its own words
        return code.group(1).strip()
    cause = _jvm_death(error, checkpoint_log, report) or root_cause(whole_text(error), uses_s3)
    return f"{cause} ({one_line(error)})" if cause else one_line(error)
