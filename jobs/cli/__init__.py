"""Command line: python -m jobs {list,run,backfill,validate,report,files,land} ...

parser.py    the commands, their options and help
commands.py  what each command does, and its exit code
running.py   the run command: one pipeline, or several in one Spark application
warm_up.py   what the JVM that makes the class archive runs (jobs/jvm.py)
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

from pydantic import ValidationError as SettingsError

from jobs.exit_codes import ExitCode
from jobs.units import UsageError

_deadline: threading.Timer | None = None


def _stop_on_signal(signum: int, frame: object) -> None:
    """SIGTERM or Ctrl-C: a run in progress stops at its next poll, within
    JOBS_STOP_GRACE_S however stuck it is; anything else stops now."""
    global _deadline
    runner = sys.modules.get("jobs.run.runner")
    if runner is None or not runner.request_stop():
        raise KeyboardInterrupt
    if _deadline is not None:  # asked twice
        _halt(0.0)
    from jobs.settings import settings

    grace_s = settings().stop_grace_s
    _deadline = threading.Timer(grace_s, _halt, args=(grace_s,))
    _deadline.daemon = True
    _deadline.start()


def _halt(waited_s: float) -> None:
    """Stop now: the JVM first, so that nothing more is written. The checkpoint makes this
    as safe as a crash: the next run redoes the batch in flight."""
    from jobs.cli.commands import fail
    from jobs.session import halt_jvm

    waited = f"still running {waited_s:.0f}s after the request to stop" if waited_s else "asked to stop twice"
    fail(ExitCode.STOPPED, f"{waited}: stopped at once; the next run redoes the batch in flight, if any")
    halt_jvm()
    sys.stdout.flush()
    os._exit(ExitCode.STOPPED)


class _Stdout(logging.StreamHandler):
    """Plain lines on whatever sys.stdout is when one is written (a test's capture swaps it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value) -> None:
        pass


class _NamedLines(logging.Formatter):
    """'clickstream: <line>' for a run's lines (jobs/run/context.py run_log), when the runs of
    several pipelines share the output."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        pipeline = record.name.removeprefix("jobs.run.") if record.name.startswith("jobs.run.") else None
        named = pipeline and not line.startswith((f"{pipeline} ", f"{pipeline}: "))
        return f"{pipeline}: {line.lstrip()}" if named else line


def name_pipelines_in_logs() -> None:
    for handler in logging.getLogger("jobs").handlers:
        if isinstance(handler, _Stdout):
            handler.setFormatter(_NamedLines("%(message)s"))


@contextlib.contextmanager
def logs_on_stdout() -> Iterator[None]:
    """What the product logs (a run's steps and batches, a validation's summary) is a
    command's output: plain lines on stdout, while the command runs."""
    logger, handler = logging.getLogger("jobs"), _Stdout()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def main(argv: list[str] | None = None) -> int:
    from jobs.cli.parser import build_parser

    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGINT, _stop_on_signal)
    with logs_on_stdout():
        return _handled(args)


def _handled(args) -> int:
    """The command's exit code; an error becomes one line on stderr, never a traceback."""
    from jobs.cli.commands import fail

    try:
        return args.handler(args)
    except UsageError as error:
        return fail(ExitCode.USAGE, str(error))
    except SettingsError as error:
        problem = error.errors()[0]
        setting = "JOBS_" + "_".join(str(p) for p in problem["loc"]).upper()
        return fail(ExitCode.USAGE, f"{setting} (environment): {problem['msg']}")
    except KeyboardInterrupt:
        return ExitCode.STOPPED
    except BrokenPipeError:  # the reader went away (e.g. `jobs list | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK
    except Exception as error:  # noqa: BLE001 - one actionable line, not a traceback
        from jobs.lake.faults import root_cause
        from jobs.run.failure import one_line
        from jobs.session import JavaMissing

        code = ExitCode.REFUSED if isinstance(error, JavaMissing) else ExitCode.FAILED
        line = one_line(error)
        cause = root_cause(str(error), uses_s3=False)
        return fail(code, f"{cause} ({line})" if cause else line)
