"""A backfill's params, checked before any Spark work, and the request the later steps follow.

params: pipeline; either since and until (dates: the landing's dt=YYYY-MM-DD folders,
both included) or prefixes (folders under the pipeline's landing location); publish_to
(default <root>/published/<pipeline>); max_files_per_trigger (optional).

This module imports no Spark: the Airflow DAG checks params with it at run time.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, replace
from datetime import UTC, date, datetime
from typing import Any

from jobs import declare
from jobs.backfill.options import BACKFILL_PARAMS, backfill_args
from jobs.flow.patterns import pattern_of
from jobs.lake import fs
from jobs.lake.landing import dated_folders, undated
from jobs.lake.layout import FOLDERS, OWN_ROOTS, Locations, StorageError, is_inside, join, normalize, own_root
from jobs.settings import settings

VERSIONS = "versions"
MAX_PREFIXES = 100
# The production areas under a root (jobs/lake/layout.py): a backfill publishes elsewhere.
PRODUCTION_AREAS = (*FOLDERS.values(), *OWN_ROOTS)

# A prefix is a plain relative path: no glob characters, no '..', nothing a shell or
# Hadoop's globbing would read as anything but a name.
_PREFIX_PART = r"[A-Za-z0-9][A-Za-z0-9_=.\-]*"
_PREFIX = re.compile(rf"^{_PREFIX_PART}(/{_PREFIX_PART})*/?$")
_BACKFILL_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}\Z")


class BackfillError(ValueError):
    """The backfill cannot run as asked; nothing was done."""


@dataclass(frozen=True)
class BackfillRequest:
    pipeline: str
    backfill_id: str
    root: str  # where the production landing location is
    work_root: str  # the backfill's own checkpoint, table, quarantine and run reports
    publish_to: str
    since: str | None = None
    until: str | None = None
    prefixes: tuple[str, ...] = ()
    max_files_per_trigger: int | None = None
    warnings: tuple[str, ...] = ()  # what the caller should tell the user; nothing was refused
    # A Delta table's range is replaced in the production table (jobs/backfill/replace.py),
    # unless publish_to was given: then, as for Parquet, a copy is published.
    into_table: bool = False
    # A reader of another pipeline's table (jobs/backfill/readers.py): that pipeline, and where
    # its rows of the range are read from: its own backfill's staged result in a cascade
    # (--with-downstream); None: they are copied from its table into <work root>/input.
    upstream: str | None = None
    reads: str | None = None

    @property
    def stage(self) -> str:
        """Where the staged result is written: the version to publish, or what replaces the range."""
        if self.into_table:
            return join(self.work_root, "staged")
        return join(self.publish_to, VERSIONS, self.backfill_id)

    @property
    def landing(self) -> str:
        """The landing it reads: a reader's, its upstream's rows of the range (`reads`)."""
        if self.upstream is not None:
            return self.reads or join(self.work_root, "input")
        return Locations.resolve(self.pipeline, root=self.root).landing

    @property
    def landing_glob(self) -> str | None:
        if not self.prefixes:
            return None
        names = [p.rstrip("/") for p in self.prefixes]
        return names[0] if len(names) == 1 else "{" + ",".join(names) + "}"

    @property
    def locations(self) -> Locations:
        """The production landing location (a reader's: `landing`) and dimensions; everything
        else under the work root."""
        own = Locations.resolve(self.pipeline, root=self.root).with_own_root(self.pipeline, self.work_root)
        return replace(own, landing=self.landing) if self.upstream is not None else own

    def to_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"pipeline": self.pipeline}
        if not self.into_table:
            params["publish_to"] = self.publish_to
        if self.since:
            params.update(since=self.since, until=self.until)
        else:
            params["prefixes"] = list(self.prefixes)
        if self.max_files_per_trigger:
            params["max_files_per_trigger"] = self.max_files_per_trigger
        return params

    def step_args(self, step: str) -> list[str]:
        """`python -m jobs backfill ... --step=STEP`: one step (jobs/backfill/steps.py), the
        request checked again. One argument per option, each `--name=value`, so no value can
        pass for an option."""
        args = ["backfill", self.pipeline, f"--root={self.root}", f"--id={self.backfill_id}"]
        return [*args, *backfill_args(self.to_params()), f"--step={step}"]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "prefixes": list(self.prefixes), "stage": self.stage}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> BackfillRequest:
        fields = {k: v for k, v in raw.items() if k != "stage"}
        return cls(
            **{
                **fields,
                "prefixes": tuple(fields.get("prefixes") or ()),
                "warnings": tuple(fields.get("warnings") or ()),
            }
        )


def work_root_of(root: str, pipeline: str, backfill_id: str) -> str:
    """A backfill's own checkpoint, table, quarantine and run reports (root normalized)."""
    return own_root(root, "backfills", pipeline, backfill_id)


def backfill_id_for(run_id: str, run_after: datetime) -> str:
    """A name for the backfill of one Airflow DAG run: the same for every retry of that run
    (so a retry resumes from the backfill's checkpoint), different for each new trigger."""
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:8]
    return f"{run_after.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}-{digest}"


def _date(value: Any, name: str) -> str:
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise BackfillError(f"{name} {value!r}: give a date like 2023-07-30")


def publish_roots(root: str) -> list[str]:
    """Where backfills may publish: the root, and JOBS_PUBLISH_ROOTS (comma-separated)."""
    return [root, *settings().publish_roots]


def check_publish_location(publish_to: str, root: str, allowed_roots: list[str]) -> str:
    """The normalized publish location, if it is inside a configured root and clear of
    every production area; otherwise BackfillError."""
    try:
        target = normalize(publish_to)
    except StorageError as error:
        raise BackfillError(f"publish_to: {error}") from None
    roots = [normalize(r) for r in allowed_roots]
    if not any(is_inside(target, r) and target != r for r in roots):
        raise BackfillError(
            f"publish_to {target}: must be inside the root or one of JOBS_PUBLISH_ROOTS (comma-separated, "
            f"set for the Airflow processes or the command); configured now: {roots}"
        )
    production = [join(normalize(root), area) for area in PRODUCTION_AREAS]
    for area in production:
        if is_inside(target, area) or is_inside(area, target):
            raise BackfillError(f"publish_to {target}: overlaps the production location {area}; publish elsewhere")
    return target


def backfill_request(
    params: dict[str, Any],
    root: str,
    allowed_roots: list[str],
    backfill_id: str,
    pipelines: dict[str, declare.PipelineBase] | None = None,
    check_landing: bool = True,
    reads: str | None = None,
) -> BackfillRequest:
    """Check a backfill's params and turn them into a request; BackfillError says what is wrong.
    `reads`: a reader's in a cascade, its upstream backfill's staged result."""
    unknown = set(params) - set(BACKFILL_PARAMS)
    if unknown:
        raise BackfillError(f"unknown param(s) {sorted(unknown)}")
    pipeline = _backfilled(params.get("pipeline"), pipelines if pipelines is not None else declare.load_all())
    if pipeline.source.table is not None and (params.get("since") is None or params.get("prefixes")):
        raise BackfillError(
            f"pipeline {pipeline.name!r} reads table {pipeline.source.table!r}: give a date range (since, until), "
            "which names the dates of that table's rows it reads again"
        )
    if not _BACKFILL_ID.match(backfill_id):
        raise BackfillError(f"backfill id {backfill_id!r}: letters, digits, '.', '_' and '-' only")
    since, until = _range(params.get("since"), params.get("until"), params.get("prefixes") or [])
    prefixes = _prefixes(params.get("prefixes") or [])
    max_files = params.get("max_files_per_trigger")
    if max_files is not None and (not isinstance(max_files, int) or isinstance(max_files, bool) or max_files < 1):
        raise BackfillError(f"max_files_per_trigger {max_files!r}: a whole number of files, at least 1")
    into_table = pipeline.output.format == "delta" and not params.get("publish_to")
    if into_table and since is None:
        raise BackfillError(
            f"pipeline {pipeline.name!r} writes a Delta table, whose range a backfill replaces in place: give a date "
            "range (since, until), which names the dates it replaces; prefixes name none (or give publish_to for a copy)"
        )
    root = normalize(root)
    publish_to = params.get("publish_to") or join(root, "published", pipeline.name)
    request = BackfillRequest(
        pipeline=pipeline.name,
        backfill_id=backfill_id,
        root=root,
        work_root=work_root_of(root, pipeline.name, backfill_id),
        publish_to=check_publish_location(publish_to, root, allowed_roots),
        since=since,
        until=until,
        prefixes=prefixes,
        max_files_per_trigger=max_files,
        into_table=into_table,
        upstream=pipeline.source.table,
        reads=reads,
    )
    if pipeline.source.table is not None or not check_landing:  # a reader's range is its upstream's rows
        return request
    return replace(request, warnings=_check_landed(request))


def _backfilled(name: Any, pipelines: dict[str, declare.PipelineBase]) -> declare.PipelineBase:
    """The declared pipeline `name`, if a backfill covers its pattern."""
    if name not in pipelines:
        raise BackfillError(f"pipeline {name!r}: not declared; declared pipelines: {sorted(pipelines)}")
    refusal = pattern_of(pipelines[name]).backfill_refusal
    if refusal:
        raise BackfillError(f"pipeline {name!r}: backfills cover window and events pipelines; {refusal}")
    return pipelines[name]


def _range(since: Any, until: Any, prefixes: Any) -> tuple[str | None, str | None]:
    """A closed range of landing dates, or none when prefixes say what to reprocess."""
    if (since is None) != (until is None):
        raise BackfillError("give both since and until (a closed range of landing dates), or prefixes")
    if since is not None and prefixes:
        raise BackfillError("give a date range (since, until) or prefixes, not both")
    if since is None and not prefixes:
        raise BackfillError("say which landed data to reprocess: since and until (dates), or prefixes")
    if since is None:
        return None, None
    since, until = _date(since, "since"), _date(until, "until")
    if since > until:
        raise BackfillError(f"since {since} is after until {until}")
    return since, until


def _prefixes(prefixes: Any) -> tuple[str, ...]:
    """Plain relative folders under the landing location: nothing a glob or a shell would read."""
    if not isinstance(prefixes, list) or len(prefixes) > MAX_PREFIXES:
        raise BackfillError(f"prefixes: a list of at most {MAX_PREFIXES} folders under the landing location")
    for prefix in prefixes:
        if not isinstance(prefix, str) or not _PREFIX.match(prefix) or ".." in prefix.split("/"):
            raise BackfillError(
                f"prefix {prefix!r}: a relative folder under the landing location, such as "
                "'dt=2023-07-30/hour=10' (letters, digits, '_', '=', '.', '-' and '/'; no globs, no '..')"
            )
    return tuple(p.rstrip("/") for p in prefixes)


def _check_landed(request: BackfillRequest) -> tuple[str, ...]:
    """Refuse a range that selects nothing: a backfill of no data is a mistake. Warn of
    files a date range cannot select: those landed outside dt= folders."""
    landing = request.landing
    if request.since:
        if not dated_folders(landing, date.fromisoformat(request.since), date.fromisoformat(request.until)):
            names = fs.list_names(landing)
            flat = (
                " (it holds no dt= folders at all: files landed flat)"
                if names and not set(names) - set(undated(names))
                else ""
            )
            raise BackfillError(
                f"no landed folders dt={request.since} .. dt={request.until} under {landing}{flat}: a date range "
                "reads dt=YYYY-MM-DD folders; land files into them (python -m jobs land --dated), or reprocess "
                "files landed elsewhere with --prefix"
            )
        outside = undated(fs.list_names(landing))
        if outside:
            shown = ", ".join(map(repr, outside[:3])) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
            return (
                f"{len(outside)} entries under {landing} are outside dt=YYYY-MM-DD folders ({shown}): a date range "
                "never selects them; reprocess them with prefixes, or land files into dt= folders",
            )
        return ()
    missing = [p for p in request.prefixes if not fs.exists(join(landing, p))]
    if missing:
        raise BackfillError(f"no landed data under {landing} for prefix(es) {missing}")
    return ()
