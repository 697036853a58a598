"""A backfill's params, defined once: the command line's flags (jobs/cli/backfill.py), the
backfill DAG's form (jobs/orchestration/factory.py) and each step's arguments (request.py)
all come from BACKFILL_OPTIONS. Light on purpose: DAG files import it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BackfillOption:
    """One of a backfill's params besides its pipeline: the DAG's param and the request's
    field (`name`), the command line's flag (each value one `--flag=value` argument, a list's
    once per item), its help, and its JSON schema (the DAG's form)."""

    name: str
    flag: str
    metavar: str
    help: str
    schema: dict[str, Any]

    @property
    def repeated(self) -> bool:
        return "array" in self.schema["type"]


# A backfill's params (jobs/backfill/): its command line, DAG form and steps take them from here.
BACKFILL_OPTIONS = (
    BackfillOption(
        "since", "--since", "DATE", "first landing date (dt= folder)", {"type": ["null", "string"], "format": "date"}
    ),
    BackfillOption(
        "until",
        "--until",
        "DATE",
        "last landing date (dt= folder), included",
        {"type": ["null", "string"], "format": "date"},
    ),
    BackfillOption(
        "prefixes",
        "--prefix",
        "FOLDER",
        "or: folders under the landing location, e.g. dt=2023-07-30/hour=10 (the flag once per folder)",
        {"type": ["null", "array"], "items": {"type": "string"}},
    ),
    BackfillOption(
        "publish_to",
        "--publish-to",
        "URI",
        "where to publish, inside the root or JOBS_PUBLISH_ROOTS (default: <root>/published/<pipeline>; "
        "for a Delta table, none: the range's dates are replaced in the production table)",
        {"type": ["null", "string"]},
    ),
    BackfillOption(
        "max_files_per_trigger",
        "--max-files-per-trigger",
        "N",
        "at most this many new files per batch",
        {"type": ["null", "integer"], "minimum": 1},
    ),
)
BACKFILL_PARAMS = ("pipeline", *(option.name for option in BACKFILL_OPTIONS))


def backfill_args(params: dict[str, Any]) -> list[str]:
    """The params' flags, in BACKFILL_OPTIONS' order: one `--flag=value` argument per value."""
    args = []
    for option in BACKFILL_OPTIONS:
        value = params.get(option.name)
        values = value if option.repeated else [value]
        args += [f"{option.flag}={item}" for item in values or () if item is not None]
    return args
