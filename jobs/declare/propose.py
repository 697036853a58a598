"""A first declaration and suite from a sample of landed events (profile.py), for
`python -m jobs profile LANDING --name NAME`.

The declaration is an `events` pipeline (each usable event a row, as it is): its schema the
sample's fields with nested types (a field of two JSON types takes the commoner, and the note
says what the other's events meet), the likely event time and its format (a field in every
event whose every value reads as a time, a time-like name first), and the required fields (in
every sampled event, never null). The suite: not null where the sample never was, the null
share where it sometimes was, value sets of low-cardinality text, ranges of numbers,
uniqueness where it held. Both say they are proposed (their first line, the description), and
both load and run as they are (tests/e2e/test_profile.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from jobs.columns import EVENT_TIME, reserved
from jobs.declare.profile import Field, Sample
from jobs.units import UsageError

_COLUMN = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")  # a top-level field: a column's name
_NESTED = re.compile(r"\A[A-Za-z_@$][A-Za-z0-9_@$\-]*\Z")  # a field inside an object (a path's part)
_TIME_NAME = re.compile(r"time|timestamp|date|created|updated|epoch|(^|_)ts$|(^|_)at$", re.IGNORECASE)
_ID_NAME = re.compile(r"(^|_)(id|uuid|key)$|[a-z]Id$", re.IGNORECASE)
VALUE_SET_MAX = 20  # distinct texts a value set may list
UNIQUE_AT_LEAST = 20  # values a column needs in the sample before it is called unique
TIME_SHARE = 0.95  # of the events whose field reads as a time, for the field to be the event time
PROPOSED = "PROPOSED by `python -m jobs profile`"


@dataclass
class Proposal:
    declaration: dict[str, Any]
    suite: dict[str, Any]
    event_time: tuple[str, str]  # its path and format
    notes: list[str] = field(default_factory=list)


def propose(name: str, sample: Sample) -> Proposal:
    """The declaration and suite the sample suggests; UsageError when it suggests none."""
    if not sample.count:
        raise UsageError(
            f"profile: no event in the {len(sample.files)} file(s) read of {sample.files_listed} "
            f"({sample.lines} line(s), {sample.unusable} not a JSON object): nothing to propose from"
        )
    notes: list[str] = []
    schema = _fields(sample.events.children, "", notes, top=True)
    if not schema:
        raise UsageError("profile: the sampled events have no field a declaration can name")
    paths = dict(_scalar_paths(sample.events.children, schema, ""))
    found = _event_time(paths, sample.count)
    if found is None:
        raise UsageError(
            f"profile: no field holds a time in {TIME_SHARE:.0%} of the sampled events (ISO-8601 text, or epoch "
            "seconds or milliseconds under a time-like name), and a pipeline needs an event time; fields: "
            f"{', '.join(paths)}"
        )
    *event_time, untimed = found
    if untimed:
        notes.append(
            f"{untimed} of {sample.count} events have no {event_time[0]} that reads as {event_time[1]}: "
            "a run quarantines them"
        )
    required = [p for p, f in paths.items() if p != event_time[0] and _always(f, sample.count)]
    described = f"{PROPOSED} from a sample of {sample.count:,} events: every usable event, as it is. Review it."
    declaration = {
        "name": name,
        "pattern": "events",
        "description": described,
        "source": {
            "format": "json",
            "schema": schema,
            **({"required": required} if required else {}),
            "event_time": {"column": event_time[0], "format": event_time[1]},
        },
        "output": {"format": "parquet", "partition_by": "event_date"},
    }
    columns = {n: f for n, f in sample.events.children.items() if n in schema and isinstance(schema[n], str)}
    suite = {"table": name, "expectations": _expectations(columns, schema, sample.count, required, event_time)}
    unusable = (sample.unusable + untimed) / sample.lines
    share = max(0.05, math.ceil(round((unusable + 0.02) * 100, 6)) / 100)  # round: 7.000000000000001
    suite["run_checks"] = {
        "rows_balance": {"severity": "fail"},
        "quarantine_share": {"max": share, "severity": "warn", "fail_above": 0.5},
    }
    if sample.unusable:
        notes.append(f"{sample.unusable} of {sample.lines} line(s) are not a JSON object: a run quarantines them")
    return Proposal(declaration, suite, tuple(event_time), notes)


def written(proposal: Proposal) -> tuple[str, str]:
    """The declaration's and the suite's YAML, each under a first line saying it is proposed.
    No producer's text is in a comment: field names and values are YAML's to quote."""
    import yaml

    def text(value: dict[str, Any], what: str) -> str:
        body = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100)
        return f"# {PROPOSED} from landed events: {what}. Review it, then take this line out.\n{body}"

    return text(proposal.declaration, "a first declaration"), text(proposal.suite, "a first expectation suite")


def _fields(children: dict[str, Field], path: str, notes: list[str], top: bool = False) -> dict[str, Any]:
    """Each field a declaration can name, with its type; what it cannot, said in `notes`."""
    declared: dict[str, Any] = {}
    seen: set[str] = set()
    for name, found in children.items():
        where = f"{path}{name}"
        why = _refused(name, top)
        if why is None and name.lower() in seen:
            why = "another field has the same name but for case (Spark reads names without case)"
        if why is not None:
            notes.append(f"field {where!r} left out: {why} (a run ignores fields not declared)")
            continue
        kind = _type(found, where, notes)
        if kind is not None:
            declared[name] = kind
            seen.add(name.lower())
    return declared


def _refused(name: str, top: bool) -> str | None:
    if top:
        return "not a plain column name" if not _COLUMN.match(name) else reserved(name)
    return None if _NESTED.match(name) else "not a name a path can take"


def _type(found: Field, path: str, notes: list[str]) -> Any:
    """A field's declared type from the JSON kinds of its values (None: it cannot be declared)."""
    if not found.types:  # declared string, an object arriving later would quarantine its event
        notes.append(f"field {path!r} left out: only ever null here, its type unknown (a run ignores it)")
        return None
    numbers = found.types["long"] + found.types["double"]
    if numbers and numbers == sum(found.types.values()):
        chosen, agreeing = ("double" if found.types["double"] else "long"), numbers
    else:
        chosen, agreeing = found.types.most_common(1)[0]
    others = sum(found.types.values()) - agreeing
    if others:
        said = {"object": "an object", "array": "an array"}.get(chosen, chosen)
        notes.append(
            f"field {path!r}: {others} of {others + agreeing} values are not {said}: their events are quarantined "
            "(wrong_field_type), unless the declaration says on_type_mismatch: rescue"
        )
    if chosen == "object":
        inner = _fields(found.children, f"{path}.", notes)
        if not inner:
            notes.append(f"field {path!r} left out: its objects hold no field a declaration can name")
        return inner or None
    if chosen == "array":
        if found.element is None or not found.element.types:  # only empty arrays: their element unknown
            notes.append(f"field {path!r} left out: its arrays were empty or null here, their type unknown")
            return None
        element = _type(found.element, f"{path}[]", notes)
        return [element] if element is not None else None
    return chosen


def _scalar_paths(children: dict[str, Field], schema: dict[str, Any], path: str):
    """(path, its field) of each declared scalar outside arrays: what can be required or be the event time."""
    for name, kind in schema.items():
        if isinstance(kind, str):
            yield f"{path}{name}", children[name]
        elif isinstance(kind, dict):
            yield from _scalar_paths(children[name].children, kind, f"{path}{name}.")


def _always(found: Field, events: int) -> bool:
    """In every sampled event, never null, always of one JSON kind."""
    return found.present == events and not found.nulls and len(found.types) == 1


def _event_time(paths: dict[str, Field], events: int) -> tuple[str, str, int] | None:
    """The likely event time: a field whose values read as times in one format in all but a
    few events (TIME_SHARE; a run quarantines the others); a time-like name first, then text
    (ISO-8601) before numbers, then the most events, then the first. With how many do not."""
    found = []
    for order, (path, field_) in enumerate(paths.items()):
        named = bool(_TIME_NAME.search(path.rsplit(".", 1)[-1]))
        for fmt, count in field_.times.items():
            if count >= TIME_SHARE * events and (named or fmt == "iso8601"):
                found.append((not named, fmt != "iso8601", -count, order, path, fmt, events - count))
    return min(found)[4:] if found else None


def _expectations(
    columns: dict[str, Field], schema: dict[str, Any], events: int, required: list[str], event_time: tuple[str, str]
) -> list[dict[str, Any]]:
    expectations: list[dict[str, Any]] = [
        {"expect": "column_values_to_not_be_null", "column": EVENT_TIME, "severity": "fail"}
    ]
    for name, found in columns.items():
        kind = schema[name]
        if name in required or name == event_time[0]:  # the event time: quarantined when missing
            expectations.append({"expect": "column_values_to_not_be_null", "column": name, "severity": "fail"})
        elif (mostly := math.floor(found.values / events * 0.8 * 100) / 100) >= 0.01:
            # Sometimes null: held to its share, give or take a fifth of it.
            expectations.append(
                {"expect": "column_values_to_not_be_null", "column": name, "mostly": mostly, "severity": "warn"}
            )
        values = found.distinct
        if kind == "string" and values is not None and len(values) <= VALUE_SET_MAX and found.values >= 5 * len(values):
            expectations.append(
                {
                    "expect": "column_values_to_be_in_set",
                    "column": name,
                    "value_set": sorted(values),
                    "severity": "warn",
                }
            )
        if kind in ("long", "double") and found.low is not None and name != event_time[0]:
            expectations.append(
                {
                    "expect": "column_values_to_be_between",
                    "column": name,
                    "min_value": found.low,
                    "max_value": found.high,
                    "severity": "warn",
                }
            )
        unique = values is not None and len(values) == found.values >= UNIQUE_AT_LEAST
        if unique and kind in ("string", "long") and _ID_NAME.search(name):
            expectations.append({"expect": "column_values_to_be_unique", "column": name, "severity": "warn"})
    expectations.append(
        {"expect": "table_row_count_to_be_between", "min_value": 1, "when": "run_had_input", "severity": "warn"}
    )
    return expectations
