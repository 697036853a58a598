"""Freshness: how old a table's newest rows are, against how old they may grow.

A table's last append is the end of the newest run that appended rows to it: a run that
appended nothing (a quiet source, every row quarantined) does not make it fresh, and a
paused DAG or a stopped producer leaves it aging. How old it may grow is its declared
`freshness` (`freshness: 2 hours`) or, left out, FRESH_INTERVALS of its schedule's interval;
a pipeline run by hand, or on its upstream's schedule, has none unless declared. Past it the
table is late: the data quality report shows it first, `python -m jobs history --late` lists
it, and the data quality DAG records and alerts it (docs/history.md).

The same rule over the run reports (the report page) and over the event logs (history, the
DAG), without Spark.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from jobs.units import ON_ARRIVAL, ON_UPSTREAM, duration

if TYPE_CHECKING:
    from jobs.declare import PipelineBase
    from jobs.run.report import RunReport

FRESH_INTERVALS = 2  # a table left out of `freshness` is late after this many schedule intervals
_PRESETS = {"@hourly": 3600, "@daily": 86400, "@midnight": 86400, "@weekly": 7 * 86400}
_PRESETS |= {"@monthly": 31 * 86400, "@quarterly": 92 * 86400, "@yearly": 366 * 86400, "@annually": 366 * 86400}

# The runs that appended rows, in the event log's `runs` view, as `appended` below says it.
LAST_APPENDS = """
SELECT pipeline,
       max(ended_at) FILTER (WHERE batches > 0 AND coalesce(output_rows, 1) > 0) AS last_append,
       min(started_at) AS first_run
FROM runs WHERE record = 'run' GROUP BY pipeline
"""


def schedule_interval_s(schedule: str | None, at_least_every_s: float | None = None) -> float | None:
    """The longest gap between two runs of a schedule (a preset or a cron expression, or on
    arrival: its `at_least_every`); None for a pipeline run only by hand."""
    if schedule == ON_ARRIVAL:
        return at_least_every_s
    if not schedule or schedule in ("@once", "@continuous", ON_UPSTREAM):  # on_upstream: as often as the table it reads
        return None
    if schedule in _PRESETS:
        return _PRESETS[schedule]
    from croniter import croniter

    times = croniter(schedule, datetime(2024, 1, 1, tzinfo=UTC))
    moments = [times.get_next(datetime) for _ in range(32)]
    return max((b - a).total_seconds() for a, b in itertools.pairwise(moments))


def limit_s(declared_s: float | None, interval_s: float | None) -> tuple[float | None, bool]:
    """How old a table may grow (its declared `freshness`, else FRESH_INTERVALS of its
    schedule's interval), and whether that was declared."""
    if declared_s is not None:
        return float(declared_s), True
    return (FRESH_INTERVALS * interval_s if interval_s else None), False


def limit_said(limit_s: float | None, declared: bool, say: Callable[[float], str] = duration) -> str:
    """'2.0 h (from its schedule)', '90 minutes' (`say`: how a duration is written), or 'none'."""
    return "none" if limit_s is None else f"{say(limit_s)}{'' if declared else ' (from its schedule)'}"


def limit_of(pipeline: PipelineBase) -> tuple[float | None, bool]:
    return limit_s(pipeline.freshness_s, schedule_interval_s(pipeline.schedule, pipeline.on_arrival.at_least_every_s))


@dataclass(frozen=True)
class Freshness:
    pipeline: str
    limit_s: float | None  # None: the table has no freshness to hold
    declared: bool  # the limit is the declaration's `freshness` (else its schedule's)
    last_append: datetime | None  # the end of the newest run that appended rows
    first_run: datetime | None  # the start of its oldest run known: a table never appended to ages from it
    now: datetime

    @property
    def age_s(self) -> float | None:
        """How long since rows were last appended (or since its first run, none ever); None: never run."""
        since = self.last_append or self.first_run
        return None if since is None else (self.now - since).total_seconds()

    @property
    def late(self) -> bool:
        return self.limit_s is not None and self.age_s is not None and self.age_s > self.limit_s

    @property
    def limit_said(self) -> str:
        return limit_said(self.limit_s, self.declared)

    def describe(self) -> str:
        """'no rows appended for 5.0 h, freshness 2.0 h'."""
        if self.last_append is None:
            return f"no rows appended since its first run {duration(self.age_s)} ago, freshness {self.limit_said}"
        return f"no rows appended for {duration(self.age_s)}, freshness {self.limit_said}"

    def as_dict(self) -> dict[str, Any]:
        """As the data quality DAG records it (an XCom) and `history --late --json` prints it."""
        return {
            "pipeline": self.pipeline,
            "last_append": self.last_append.isoformat() if self.last_append else None,
            "age_s": self.age_s,
            "freshness_s": self.limit_s,
            "declared": self.declared,
            "checked_at": self.now.isoformat(),
        }


def appended(run: RunReport) -> bool:
    """Whether a run appended rows: it committed batches whose output was not 0 (a count not
    known counts)."""
    return bool(run.batch_ids) and run.output_rows != 0


def of_reports(name: str, limit: tuple[float | None, bool], runs: list[RunReport], now: datetime) -> Freshness:
    """A table's freshness, from its pipeline's run reports; `limit` as limit_s gives it."""
    ends = [datetime.fromisoformat(r.ended_at or r.started_at) for r in runs if appended(r)]
    starts = [datetime.fromisoformat(r.started_at) for r in runs]
    return Freshness(name, *limit, max(ends, default=None), min(starts, default=None), now)


def of_logs(root: str, pipelines: list[PipelineBase], now: datetime) -> list[Freshness]:
    """Each pipeline's table's freshness, from the event logs under `root` (one query over all)."""
    from jobs.history import query

    found = {
        name: (last, first)
        for name, last, first in query.connect(root, None, None, LAST_APPENDS).execute(LAST_APPENDS).fetchall()
    }
    checked = []
    for pipeline in pipelines:
        last, first = found.get(pipeline.name, (None, None))
        checked.append(Freshness(pipeline.name, *limit_of(pipeline), last, first, now))
    return checked
