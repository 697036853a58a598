"""Command line: python -m jobs {list,run,backfill,validate,report,files,land} ...

parser.py    the commands, their options and help
commands.py  what each command does, and its exit code
"""

from __future__ import annotations

import os
import signal
import sys

from pydantic import ValidationError as SettingsError

from jobs.exit_codes import ExitCode
from jobs.units import UsageError


def _stop_on_signal(signum: int, frame: object) -> None:
    """SIGTERM or Ctrl-C: a run in progress stops at its next poll; anything else stops now."""
    runner = sys.modules.get("jobs.run.runner")
    if runner is None or not runner.request_stop():
        raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    from jobs.cli.commands import fail
    from jobs.cli.parser import build_parser

    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGINT, _stop_on_signal)
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
        from jobs.session import JavaMissing

        code = ExitCode.REFUSED if isinstance(error, JavaMissing) else ExitCode.FAILED
        return fail(code, str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__)
