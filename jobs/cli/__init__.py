"""Command line: python -m jobs COMMAND ..., one module per command, each adding its own
sub-parser and handler; the handler's exit code is the command's (jobs/exit_codes.py).

list_pipelines.py  list              the declared pipelines
run.py             run               one pipeline, or several in one Spark application
backfill.py        backfill          reprocess a closed range, then publish it
validate.py        validate          a run's output, or the whole table, with Great Expectations
maintain.py        maintain          a Delta table compacted and vacuumed
plan.py            plan              what a changed declaration means against the checkpoint and table
rebuild.py         rebuild           every landed file read again into a new build, then the switch to it
quality_report.py  report            the data quality report and Data Docs
history.py         history           the run history (every pipeline's event log), asked with SQL
profile.py         profile           a first declaration and suite, proposed from landed events
files.py           files             the file ledger, or the table's files
quarantine_file.py quarantine-file   a landed file's lines quarantined unread
land.py            land              files landed atomically
jars.py            jars              the jar lock's jars, fetched once and checked
jvm_archive.py     jvm-archive       the class archive later JVMs start from
parser.py          the parser, from each command's module
common.py          what the commands share: the one-line error, dates, locations
logs.py            the product's log lines on stdout
warm_up.py         what the JVM that makes the class archive runs (jobs/jvm/archive.py)
"""

from __future__ import annotations

import os
import signal
import sys
import threading

from pydantic import ValidationError as SettingsError

from jobs.declare.load import DeclarationError
from jobs.exit_codes import ExitCode
from jobs.lake.layout import StorageError, StorageUnavailable
from jobs.run import stop
from jobs.units import UsageError

_deadline: threading.Timer | None = None


def _stop_on_signal(signum: int, frame: object) -> None:
    """SIGTERM or Ctrl-C: a run in progress stops at its next poll, within
    JOBS_STOP_GRACE_S however stuck it is; anything else stops now."""
    global _deadline
    if not stop.request_stop():
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
    from jobs.cli.common import fail
    from jobs.session import halt_jvm

    waited = f"still running {waited_s:.0f}s after the request to stop" if waited_s else "asked to stop twice"
    fail(ExitCode.STOPPED, f"{waited}: stopped at once; the next run redoes the batch in flight, if any")
    halt_jvm()
    sys.stdout.flush()
    os._exit(ExitCode.STOPPED)


def main(argv: list[str] | None = None) -> int:
    from jobs.cli.logs import logs_on_stdout
    from jobs.cli.parser import build_parser

    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGINT, _stop_on_signal)
    with logs_on_stdout():
        return _handled(args)


def _handled(args) -> int:
    """The command's exit code; an error becomes one line on stderr, never a traceback."""
    from jobs.cli.common import fail

    try:
        return args.handler(args)
    except DeclarationError as error:  # each problem on a line of its own
        if len(error.problems) == 1:
            return fail(ExitCode.USAGE, str(error))
        return fail(ExitCode.USAGE, f"{len(error.problems)} problems:\n" + "\n".join(f"  {p}" for p in error.problems))
    except UsageError as error:
        return fail(ExitCode.USAGE, str(error))
    except SettingsError as error:
        problem = error.errors()[0]
        setting = "JOBS_" + "_".join(str(p) for p in problem["loc"]).upper()
        return fail(ExitCode.USAGE, f"{setting} (environment): {problem['msg']}")
    except KeyboardInterrupt:
        return ExitCode.STOPPED
    except StorageError as error:  # a location found unusable before anything ran (as a run says it)
        return fail(ExitCode.FAILED if isinstance(error, StorageUnavailable) else ExitCode.REFUSED, str(error))
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
