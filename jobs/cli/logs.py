"""What the product logs (a run's steps and batches, a validation's summary) is a command's
output: plain lines on stdout, named by pipeline when several pipelines' runs share it."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator

from jobs.units import printable


class _Lines(logging.Formatter):
    """A record's lines with any other control character (a producer's file name may hold any:
    an escape sequence, a carriage return) escaped. Names are escaped where a message takes
    them (newlines too); this is the last guard of the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(printable(line) for line in super().format(record).split("\n"))


class _Stdout(logging.StreamHandler):
    """Plain lines on whatever sys.stdout is when one is written (a test's capture swaps it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(_Lines("%(message)s"))

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value) -> None:
        pass


class _NamedLines(_Lines):
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
    """The product's log lines on stdout, while the command runs; and the OpenLineage events
    a `console` transport logs (jobs/run/lineage.py), which asked for them there."""
    handler = _Stdout()
    loggers = [logging.getLogger(name) for name in ("jobs", "openlineage.client.transport.console")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
