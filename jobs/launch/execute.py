"""The one door of a run: `execute(request)` runs a run request (jobs/request.py), then its
validation (when asked and it committed a batch, in the same application), yielding the
run's events as they come and `Finished` last (jobs/run/events.py). `execute_group` does
the same for several requests in one Spark application (group.py).

The run goes on in a thread of its own while the caller reads its events; a stop request
(Ctrl-C, SIGTERM: jobs/run/stop.py) reaches it there as anywhere.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial

from pyspark.sql import SparkSession

from jobs import declare
from jobs.declare import PipelineBase
from jobs.exit_codes import ExitCode
from jobs.request import RunRequest, TriggerKind
from jobs.run import runner
from jobs.run.context import run_log
from jobs.run.events import Emit, Event, Finished
from jobs.run.failure import one_line
from jobs.run.lineage import listeners
from jobs.run.report import RunReport, RunStatus, save
from jobs.units import printable

# Great Expectations' context is not known to be thread-safe: one run validates at a time.
_validating = threading.Lock()


def execute(
    request: RunRequest, *, pipeline: PipelineBase | None = None, spark: SparkSession | None = None
) -> Iterator[Event]:
    """Run `request`; its events, `Finished` last. `pipeline`: the declaration to run, when
    not the one its name loads (a rebuild's, with its retention kept)."""
    return events_of(partial(finished, request, pipeline=pipeline, spark=spark), listeners([request], pipeline))


def finished_of(events: Iterator[Event]) -> Finished:
    """The one `Finished` of a run's events, for callers that say nothing as it goes (the
    events before it are left to the run's log)."""
    (ended,) = [event for event in events if isinstance(event, Finished)]
    return ended


def events_of(work: Callable[[Emit], Finished | list[Finished]], listen: Emit | None = None) -> Iterator[Event]:
    """The events `work` emits, as they come, from a thread of its own; its `Finished`s last.
    `listen` hears each as it is said (the runs' lineage: jobs/run/lineage.py)."""
    said: queue.SimpleQueue = queue.SimpleQueue()
    done, failure = object(), []

    def say(event: Event) -> None:
        if listen is not None:
            listen(event)
        said.put(event)

    def run() -> None:
        try:
            ended = work(say)
            for each in ended if isinstance(ended, list) else [ended]:
                say(each)
        except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
            failure.append(error)
        finally:
            said.put(done)

    thread = threading.Thread(target=run, name="run", daemon=True)
    thread.start()
    while (event := said.get()) is not done:
        yield event
    thread.join()
    if failure:
        raise failure[0]


def finished(
    request: RunRequest, emit: Emit, *, pipeline: PipelineBase | None = None, spark: SparkSession | None = None
) -> Finished:
    """The run, then its validation; how it finished, whatever ended it."""
    name = request.pipeline
    if request.validate:
        from jobs.validate.gx import import_in_background

        import_in_background()
    try:
        pipeline = pipeline or declare.load(name)
        if request.validate:
            from jobs.validate.suite import load_suite

            load_suite(pipeline)  # a broken suite is refused before a row is committed, not after
        refused = _quarantine_first(pipeline, request)
        if refused is not None:
            return refused
        ran = Finished.ran(runner.run(pipeline, request, spark=spark, emit=emit))
        return _validated(pipeline, request, ran, spark) if request.validate else ran
    except (declare.DeclarationError, runner.RunRefusedDeclaration) as error:  # as `list` or `plan` says it
        return Finished(name, RunStatus.REFUSED, ExitCode.USAGE, error=str(error))
    except runner.RunRefused as error:
        return Finished(name, RunStatus.REFUSED, ExitCode.REFUSED, error=str(error))
    except runner.RunStopped:
        code = ExitCode.OK if request.trigger.kind == TriggerKind.PROCESSING_TIME else ExitCode.STOPPED
        return Finished(name, RunStatus.STOPPED, code, error="stopped on request")
    except runner.RunStoppedOnData as error:
        return Finished(name, RunStatus.FAILED, ExitCode.DATA, error=f"run failed: {error}")
    except runner.RunFailed as error:
        return Finished(name, RunStatus.FAILED, ExitCode.FAILED, error=f"run failed: {error}")
    except Exception as error:  # noqa: BLE001 - a surprise is this run's failure, in one line
        run_log(name).exception("  ended by an unexpected error")
        return Finished(name, RunStatus.FAILED, ExitCode.FAILED, error=one_line(error))


def _quarantine_first(pipeline: PipelineBase, request: RunRequest) -> Finished | None:
    """The file the request names quarantined unread (the way past a batch that fails on its
    data); how the run finished when that is refused."""
    if not request.quarantine_file:
        return None
    from jobs.accounting.quarantine_file import FileAlreadyRead, NotALandedFile, quarantine_file

    try:
        path = quarantine_file(pipeline, request.locations, request.quarantine_file, request.quarantine_reason)
    except (FileAlreadyRead, NotALandedFile) as error:
        return Finished(pipeline.name, RunStatus.REFUSED, ExitCode.REFUSED, error=str(error))
    run_log(pipeline.name).info(
        "%s: %s is quarantined; this run quarantines each of its lines unread", pipeline.name, printable(path)
    )
    return None


def _validated(pipeline: PipelineBase, request: RunRequest, ended: Finished, spark: SparkSession | None) -> Finished:
    from jobs.validate.suite import load_suite
    from jobs.validate.validation import validate_run

    try:
        with _validating:  # Spark is started only for an output too large for the pandas engine
            result = validate_run(spark, pipeline, request.locations, ended.report, load_suite(pipeline))
    except Exception as error:  # noqa: BLE001 - committed rows no validation checked: a state, said
        said = f"not validated: {one_line(error)}; the next run, or python -m jobs validate, validates them"
        run_log(pipeline.name).error("%s validation of run %s: %s", pipeline.name, ended.report.run_id, said)
        _say_not_validated(ended.report, request, one_line(error))
        return replace(ended, validation="not validated", code=ExitCode.FAILED, error=said)
    return ended.validated(result.status)


def _say_not_validated(report: RunReport, request: RunRequest, why: str) -> None:
    """The run report says why its rows are not validated (its health says so without it)."""
    report.not_validated = why
    try:
        save(report, request.locations.runs, request.report_path)
    except Exception as error:  # noqa: BLE001 - the store that failed validation may fail this too
        run_log(report.pipeline).warning("  the run report could not say so: %s", one_line(error))
