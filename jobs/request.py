"""A run request: everything a caller asks of one pipeline's run, in one typed, serialisable
object. Every way in builds one (`python -m jobs run`, the Airflow operators, a group, a
backfill, a rebuild's runs, warm-up, the arrival watcher) and hands it to
`jobs.launch.execute`, which yields the run's events (jobs/run/events.py).

What a person or a DAG may set is defined once, on the fields below (`option`): the command
line's arguments (`add_arguments`, `from_args`), the DAG's params (`dag_params`,
`with_params`) and the spark-submit arguments (`argv`: the request itself, as JSON) are
made from it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import date
from enum import StrEnum
from typing import Any
from urllib.parse import urlparse

from jobs.lake.layout import Locations, normalize
from jobs.units import UsageError, check_id, parse_duration_s, parse_size

TRIGGERS = ("available-now", "once", "processing-time=<duration>")


class TriggerKind(StrEnum):
    AVAILABLE_NOW = "available-now"
    ONCE = "once"
    PROCESSING_TIME = "processing-time"


class RunMode(StrEnum):
    """What a run is for: the production's next increment (it says which landing it reads,
    jobs/run/preflight.py), a backfill's range or a rebuild's build, each on a root of its own."""

    INCREMENTAL = "incremental"
    RANGE_BACKFILL = "range-backfill"
    REBUILD = "rebuild"


@dataclass(frozen=True)
class Trigger:
    """available-now: everything landed so far, in as many batches as the rate limits
    allow, then stop; once: one batch, rate limits ignored; processing-time: a batch per
    interval until stopped."""

    kind: TriggerKind = TriggerKind.AVAILABLE_NOW
    interval_s: int | None = None

    @classmethod
    def from_text(cls, text: str) -> Trigger:
        if text in (TriggerKind.AVAILABLE_NOW, TriggerKind.ONCE):
            return cls(TriggerKind(text))
        if text.startswith("processing-time="):
            return cls(
                TriggerKind.PROCESSING_TIME, parse_duration_s(text.split("=", 1)[1], "--trigger processing-time")
            )
        raise UsageError(f"--trigger {text!r}: use one of {', '.join(TRIGGERS)}")

    def __str__(self) -> str:
        return f"processing-time={self.interval_s}s" if self.interval_s else str(self.kind)


def _date(text: str, flag: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{flag} {text!r}: use a date like 2023-07-30") from None


def _link(text: str, flag: str) -> str:
    """A web address only: the report links it, so nothing a browser would run."""
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc or any(c.isspace() or ord(c) < 32 for c in text):
        raise UsageError(f"{flag} {text!r}: give an http(s) URL")
    return text


def option(
    default: Any = None,
    *,
    flag: str,
    help: str,
    parse: Callable[[str, str], Any] | None = None,
    metavar: str | None = None,
    exclusive: str | None = None,
    param: dict[str, Any] | None = None,
    was: str | None = None,
) -> Any:
    """A field a person sets with `flag` (text read by `parse(text, flag)`; `was`: the flag's
    older name, still taken), and a DAG with a param of that name (`param`: its JSON
    schema) when given."""
    spec = {"flag": flag, "was": was, "help": help, "parse": parse, "metavar": metavar}
    spec |= {"exclusive": exclusive, "param": param}
    if isinstance(default, Trigger):
        return field(default_factory=lambda: default, metadata=spec)
    return field(default=default, metadata=spec)


@dataclass(frozen=True)
class RunRequest:
    """One run of one pipeline: where, what to read, how, and what to do after."""

    pipeline: str
    locations: Locations
    # incremental: what landed since the last run; range-backfill: a closed range into a
    # backfill's own root (jobs/backfill/); rebuild: a build's runs (jobs/change/rebuild.py).
    mode: RunMode = RunMode.INCREMENTAL
    trigger: Trigger = option(
        Trigger(),
        flag="--trigger",
        metavar="TRIGGER",
        parse=lambda text, _: Trigger.from_text(text),
        help=(
            "available-now (default): everything landed so far, in as many batches as the rate limits "
            "allow, then stop; once: everything in a single batch (rate limits ignored), then stop; "
            "processing-time=<duration> (e.g. processing-time=30s): keep running, one "
            "batch per interval, until stopped with Ctrl-C or SIGTERM"
        ),
    )
    # Admission control (jobs/flow/admission.py): one or the other; by default about a
    # sixteenth of the driver's memory per batch, or what the declaration's spark: block says.
    max_files_per_trigger: int | None = option(
        flag="--max-files-per-trigger",
        metavar="N",
        parse=lambda text, flag: _positive(text, flag),
        exclusive="limit",
        help="at most N new files per batch",
        param={"type": ["null", "integer"], "minimum": 1, "description": "at most this many new files per batch"},
    )
    max_bytes_per_trigger: int | None = option(
        flag="--max-bytes-per-trigger",
        metavar="SIZE",
        parse=lambda text, _: parse_size(text),
        exclusive="limit",
        help="about SIZE of new files per batch (bytes, or e.g. 64m, 1g; default: the driver's memory / 16)",
        param={
            "type": ["null", "string"],
            "pattern": r"^\d+[kmgtKMGT]?[bB]?$",
            "description": "about this much new data per batch (e.g. 64m)",
        },
    )
    # What the run lists under the landing location (jobs/lake/landing.py landing_path).
    landing_glob: str | None = option(
        flag="--landing-glob",
        metavar="PATTERN",
        help="list only files matching PATTERN under the landing location (e.g. 'dt=2023-07-*/*')",
    )
    landing_since: date | None = option(
        flag="--landing-since",
        metavar="DATE",
        parse=_date,
        help="list only dt=YYYY-MM-DD folders from DATE to today (UTC) under the landing location",
    )
    landing_until: date | None = None
    # Per source, what the run lists in retention's archive instead of the landing: a
    # rebuild reading the files retention moved (jobs/change/rebuild.py).
    from_archive: tuple[str, ...] | None = None
    # The way past a batch that fails on its data: this landed file's lines quarantined unread first.
    quarantine_file: str | None = option(
        flag="--quarantine-file",
        metavar="FILE",
        help="first quarantine this landed file's lines, unread (see `quarantine-file`; needs --quarantine-reason)",
        param={
            "type": ["null", "string"],
            "description": "a landed file whose batch fails on its data every run: its lines are quarantined unread",
        },
    )
    quarantine_reason: str | None = option(
        flag="--quarantine-reason",
        metavar="TEXT",
        help="why --quarantine-file is quarantined",
        param={
            "type": "string",
            "default": "quarantined by hand from Airflow",
            "description": "why quarantine_file is quarantined",
        },
    )
    validate: bool = True  # the run's output, in the same application (`--no-validate`: a later step does)
    # Chosen by the caller (the Airflow DAG) so that later steps find this run's report.
    run_id: str | None = option(
        flag="--run-id",
        metavar="ID",
        parse=check_id,
        help="name the run (default: start time and a random suffix); the Airflow DAG sets it to find the report",
    )
    link: str | None = option(
        flag="--link",
        metavar="URL",
        parse=_link,
        help="where the run was started from (the Airflow DAG sets its task's page); kept in the run report",
    )
    report_path: str | None = option(
        flag="--run-report",
        was="--report",
        metavar="PATH",
        help="also write the run report as JSON to PATH",
    )
    poll_s: float = 1.0
    # Off: a run that finds new files leaves them to the next run rather than start Spark
    # here (an Airflow task that saw nothing new, run in the worker's own process).
    start_spark: bool = True
    # Runs sharing the JVM at once (a group): each batch's default cap is its share of the heap.
    heap_shares: int = 1

    def __post_init__(self) -> None:
        # Every door checks the same: a request read from JSON (`run --request`, spark-submit)
        # goes through the parsers the flags do.
        if self.run_id is not None:
            check_id(self.run_id, "--run-id")
        if self.link is not None:
            _link(self.link, "--link")
        if self.mode not in tuple(RunMode):
            raise UsageError(f"a run's mode is one of {', '.join(RunMode)}, not {self.mode!r}")
        if self.max_files_per_trigger and self.max_bytes_per_trigger:
            raise UsageError("--max-files-per-trigger and --max-bytes-per-trigger: give one or the other")
        if bool(self.quarantine_file) != bool(self.quarantine_reason):
            raise UsageError("--quarantine-file and --quarantine-reason go together")

    def listed(self, landing: str | None = None) -> str:
        """What the run lists under a landing, its own by default (a bad pattern or date is a
        usage error)."""
        from jobs.lake.landing import landing_path  # lists a bucket: not at DAG parse time

        landing = landing or self.locations.landing
        return landing_path(landing, self.landing_glob, self.landing_since, self.landing_until)

    @property
    def lists_all(self) -> bool:
        """Whether the run lists the whole landing (what it does not list is not skipped)."""
        return not (self.landing_glob or self.landing_since or self.from_archive)

    # Serialised: for spark-submit's command line and anything that keeps a request.
    def to_json(self) -> str:
        values = asdict(self)
        values["trigger"] = str(self.trigger)
        for name in ("landing_since", "landing_until"):
            values[name] = values[name] and values[name].isoformat()
        return json.dumps(values, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunRequest:
        values = json.loads(text)
        values["locations"] = Locations(**{k: normalize(v) if v else v for k, v in values["locations"].items()})
        values["trigger"] = Trigger.from_text(values["trigger"])
        values["mode"] = RunMode(values.get("mode", RunMode.INCREMENTAL))
        for name in ("landing_since", "landing_until"):
            values[name] = values[name] and date.fromisoformat(values[name])
        if values.get("from_archive") is not None:
            values["from_archive"] = tuple(values["from_archive"])
        return cls(**values)

    def argv(self) -> list[str]:
        """`python -m jobs ...` for this request: the run command, with the request whole."""
        return ["run", f"--request={self.to_json()}"]

    def with_params(self, params: dict[str, Any]) -> RunRequest:
        """The request with a DAG run's params (those `dag_params` offers) set."""
        given = {}
        for spec_field in _options():
            value = params.get(spec_field.name)
            if spec_field.metadata["param"] is not None and value not in (None, ""):
                parse = spec_field.metadata["parse"]
                given[spec_field.name] = parse(str(value), spec_field.name) if parse else value
        if not given.get("quarantine_file"):
            given.pop("quarantine_reason", None)
        return replace(self, **given)


def _positive(text: str, flag: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise UsageError(f"{flag} {text!r}: give a whole number") from None
    if number < 1:
        raise UsageError(f"{flag} {text!r}: give 1 or more")
    return number


def _options() -> list:
    return [f for f in fields(RunRequest) if "flag" in f.metadata]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line's options of a run, from the request's fields."""
    groups: dict[str, Any] = {}
    for spec_field in _options():
        spec = spec_field.metadata
        adder = parser
        if spec["exclusive"]:
            if spec["exclusive"] not in groups:
                groups[spec["exclusive"]] = parser.add_mutually_exclusive_group()
            adder = groups[spec["exclusive"]]
        default = str(spec_field.default_factory()) if spec_field.name == "trigger" else None
        flags = [spec["flag"], spec["was"]] if spec["was"] else [spec["flag"]]
        adder.add_argument(*flags, dest=spec_field.name, default=default, metavar=spec["metavar"], help=spec["help"])
    parser.add_argument(
        "--no-validate",
        action="store_true",
        help="skip validating the run's output (e.g. when a later step, like the Airflow DAG's, validates it)",
    )


def from_args(args: argparse.Namespace, pipeline: str, locations: Locations) -> RunRequest:
    """The request the command line's options (`add_arguments`) ask for."""
    given: dict[str, Any] = {}
    for spec_field in _options():
        text = getattr(args, spec_field.name, None)
        if text is not None:
            parse = spec_field.metadata["parse"]
            given[spec_field.name] = parse(text, spec_field.metadata["flag"]) if parse else text
    return RunRequest(pipeline=pipeline, locations=locations, validate=not args.no_validate, **given)


def dag_params() -> dict[str, Any]:
    """The DAG's params of a run (name -> Param), from the request's fields."""
    from airflow.sdk import Param

    params = {}
    for spec_field in _options():
        schema = spec_field.metadata["param"]
        if schema is not None:
            params[spec_field.name] = Param(
                schema.get("default"), **{k: v for k, v in schema.items() if k != "default"}
            )
    return params
