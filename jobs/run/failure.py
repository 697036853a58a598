"""Why a run failed, in one line: the root cause a user can act on, found in the error,
its causes and the JVM's stack trace; the trace itself stays in Spark's log."""

from __future__ import annotations

from jobs.lake.faults import root_cause
from jobs.lake.layout import StorageError
from jobs.run.checkpoint import CheckpointLog
from jobs.run.report import RunReport


def one_line(error: BaseException) -> str:
    """The first meaningful line of an error, without a JVM stack trace."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0].strip()[:500]


def whole_text(error: BaseException | None) -> str:
    """An error with its causes and, for a JVM error, its Java stack trace ("Caused by: ...")."""
    parts, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        parts += [str(error), str(getattr(error, "_stackTrace", "") or "")]
        error = getattr(error, "_cause", None) or error.__cause__
    return "\n".join(parts)


def _jvm_death(error: BaseException, log: CheckpointLog, report: RunReport) -> str | None:
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
        batch = log.batch_in_flight()
    except (OSError, StorageError):
        batch = None  # the storage is what failed
    where = f" in batch {batch}" if batch is not None else ""
    then = f"; the next run redoes batch {batch} with the same files" if batch is not None else ""
    if code in OUT_OF_MEMORY_EXITS or "OutOfMemoryError" in text:
        limits = report.batch_limits or {}
        now = (
            f" (this run: at most {limits['max_files']} files per batch)"
            if limits.get("max_files")
            else f" (this run: about {limits['max_bytes'] / 2**20:,.0f} MiB per batch)"
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


def failure_cause(error: BaseException, log: CheckpointLog, report: RunReport, uses_s3: bool) -> str:
    """The one line a failed run reports: the root cause first when one is known."""
    cause = _jvm_death(error, log, report) or root_cause(whole_text(error), uses_s3)
    return f"{cause} ({one_line(error)})" if cause else one_line(error)
