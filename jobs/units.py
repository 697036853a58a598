"""The units declarations and command lines are written in: durations, sizes, names, ids;
and producers' values as the product writes them back (a command to paste, a console line).

Each comes as a parse function (for command lines) and as a pydantic type (for
declarations), so both say the same thing about the same mistake.
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Callable
from datetime import UTC, datetime
from difflib import get_close_matches
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator

_DURATION = re.compile(r"\A\s*(\d+)\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|h|days?|d)\s*\Z")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SIZE = re.compile(r"\A\s*(\d+)\s*([kmgt]?)b?\s*\Z", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_NAME = re.compile(r"\A[a-z][a-z0-9_]*\Z")
_COLUMN = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_PATH = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_@$][A-Za-z0-9_@$\-]*)*\Z")
_CODE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*\Z")
_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}\Z")


class UsageError(ValueError):
    """Something asked for cannot be done as written: a declaration, a suite or an option (exit 2)."""


def parse_duration_s(text: object, what: str = "duration") -> int:
    """'5 minutes' (or '5m', '5 min') -> 300. Whole seconds, minutes, hours or days."""
    match = _DURATION.match(str(text))
    if not match:
        raise UsageError(f"{what}: {text!r} is not a duration like '30 seconds', '5 minutes' or '1 hour'")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)[0]]
    if seconds <= 0:
        raise UsageError(f"{what}: {text!r} must be longer than zero")
    return seconds


def duration_words(seconds: int) -> str:
    """300 -> '5 minutes', 86400 -> '1 day': the largest whole unit, as a declaration writes it."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            return f"{seconds // size} {unit}{'s' if seconds != size else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def duration(seconds: float | None) -> str:
    """A duration for a person: 45 s, 12 min, 3.2 h, 4.0 d, 2.3 y."""
    if seconds is None:
        return "-"
    for unit, size in (("y", 365.25 * 86400), ("d", 86400), ("h", 3600)):
        if abs(seconds) >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds / 60:.0f} min" if abs(seconds) >= 60 else f"{seconds:.0f} s"


def spark_duration(seconds: int) -> str:
    """A duration string Spark parses the same way everywhere ('300 seconds')."""
    return f"{seconds} seconds"


def parse_size(text: str) -> int:
    """'64m' -> 67108864. Plain numbers are bytes."""
    match = _SIZE.match(str(text))
    if not match:
        raise UsageError(f"size {text!r}: use a number of bytes or a number with k, m, g or t (e.g. 64m)")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]


def check_id(value: str, what: str) -> str:
    """Run and backfill ids: they name files and folders, so letters, digits, '.', '_' and '-' only."""
    if not _ID.match(value):
        raise UsageError(f"{what} {value!r}: letters, digits, '.', '_' and '-' only")
    return value


# Run ids, validations (`table-<time>`) and GX's run names (`run-<run id>`) are named by a UTC time.
ID_TIME = "%Y%m%dT%H%M%SZ"
_NAMED_AT = re.compile(r"(?:run-)?(?:table-)?(\d{8}T\d{6}Z)")


def new_run_id(now: datetime) -> str:
    """Sortable by start time, unique across hosts."""
    return f"{now.strftime(ID_TIME)}-{secrets.token_hex(3)}"


def named_before(name: str, moment: datetime) -> bool:
    """Whether `name` (a run id, `table-<time>` or `run-<run id>`, with anything after) is
    named by a time before `moment`; a name with no such time is not."""
    found = _NAMED_AT.match(name)
    return found is not None and found.group(1) < moment.astimezone(UTC).strftime(ID_TIME)


def _positive(value: object, parse: Callable[[str], int], zero: str) -> int:
    """A declared amount: a whole number as it is, or text in the unit's own words; above zero."""
    if isinstance(value, int) and not isinstance(value, bool):
        amount = value
    else:
        try:
            amount = parse(str(value))
        except UsageError as error:
            raise ValueError(str(error).removeprefix(": ")) from None
    if amount <= 0:
        raise ValueError(f"{value!r} {zero}")
    return amount


def _seconds(value: object) -> int:
    """A declared duration, always with its unit: a bare 15 could mean seconds or minutes."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(f"{value!r} has no unit: write '{value} seconds' or '{value} minutes' (or hours, days)")
    return _positive(value, lambda text: parse_duration_s(text, ""), "must be longer than zero")


def _bytes(value: object) -> int:
    return _positive(value, parse_size, "must be more than zero")


def _name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{value!r} must be lower-case letters, digits and '_'")
    return value


def parse_name(text: str, what: str = "name") -> str:
    """A pipeline-style name from a command line, refused as a declaration refuses it."""
    try:
        return _name(text)
    except ValueError as error:
        raise UsageError(f"{what}: {error}") from None


def _column(value: str) -> str:
    if not _COLUMN.match(value):
        raise ValueError(f"{value!r} is not a plain column name")
    return value


# Airflow's own presets (airflow.utils.dates.cron_presets, and the two of its own timetables).
SCHEDULE_PRESETS = ("@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly", "@once", "@continuous")
ON_ARRIVAL = "on_arrival"  # the product's own: a run when files land (jobs/orchestration/arrival.py)
ON_UPSTREAM = "on_upstream"  # a run when the table a pipeline reads gets rows (docs/graph.md)


def _schedule(value: str) -> str:
    """A schedule Airflow takes: one of its presets, or a cron expression croniter reads, as
    Airflow checks it when it bags a DAG (a schedule it refuses would fail the DAG file)."""
    if value in SCHEDULE_PRESETS or value in (ON_ARRIVAL, ON_UPSTREAM):
        return value
    from croniter import CroniterError, croniter

    try:
        croniter(value)
    except (CroniterError, ValueError) as error:
        presets = ", ".join(SCHEDULE_PRESETS)
        words = [ON_ARRIVAL, ON_UPSTREAM, *SCHEDULE_PRESETS]
        close = get_close_matches(value, words, n=1, cutoff=0.7)
        meant = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"{value!r} is not a schedule Airflow reads{meant}: {ON_ARRIVAL}, {ON_UPSTREAM}, a preset ({presets}) or a cron "
            f"expression like '0 * * * *' ({error})"
        ) from None
    return value


def _path(value: str) -> str:
    if not _PATH.match(value):
        raise ValueError(f"{value!r} is not a field name, or a path to a field inside objects like repo.name")
    return value


def _code(value: str) -> str:
    if not _CODE.match(value):
        raise ValueError(f"{value!r} is not module:function, e.g. my_transforms:tag_internal")
    return value


def column_name(path: str) -> str:
    """The flat column a path becomes ('repo.name' -> 'repo_name'); a field's name is itself."""
    return path.replace(".", "_")


# Declaration types: a duration in whole seconds ("5 minutes" -> 300), a size in bytes
# ("64m" -> 67108864), a pipeline-style name (lower-case letters, digits, '_'), a column name,
# a field or a path to one inside objects ("repo.name"), a schedule Airflow reads.
Duration = Annotated[int, BeforeValidator(_seconds)]
Size = Annotated[int, BeforeValidator(_bytes)]
Name = Annotated[str, AfterValidator(_name)]
ColumnName = Annotated[str, AfterValidator(_column)]
FieldPath = Annotated[str, AfterValidator(_path)]
Schedule = Annotated[str, AfterValidator(_schedule)]
CodeName = Annotated[str, AfterValidator(_code)]  # module:name, a team's own Python (jobs/flow/transform.py)


# Values a producer chose (file names, keys), as the product shows them: in a command for a user
# to paste, each quoted for the shell, so that pasting runs that command and nothing else
# (`batch$(id).json`); in a line of the console or a report, control characters escaped, so
# that a name cannot move the cursor, clear a line or forge another line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def jobs_command(*args: str) -> str:
    """`python -m jobs ARGS...`, each argument quoted as the shell needs it."""
    return shlex.join(["python", "-m", "jobs", *args])


def printable(name: str) -> str:
    """`name` with each control character written as an escape (a newline as `\\n`)."""
    return _CONTROL.sub(lambda found: found.group().encode("unicode_escape").decode(), name)
