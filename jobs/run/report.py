"""Run reports: what one run did, in numbers a person can check, stored as JSON per run.

Rows are counted per batch (BatchAccount, kept in the ledger) and summed per run:

    input_rows = used_rows + quarantined_rows + filtered_rows + late_rows_dropped + duplicates_dropped

`used_rows`: aggregated into windows, written as events, handed to a processor or joined.
Stored reports carry `report_version`; version 1 called them `aggregated_rows`, still read.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, model_validator

from jobs.accounting.accounts import BatchAccount, from_version_1, tied_files
from jobs.flow.admission import BatchSize, describe_sizes
from jobs.history.anomalies import Anomaly, run_metrics
from jobs.lake import fs
from jobs.lake.layout import StorageError, join, normalize
from jobs.run.audit import SkippedFiles, file_names
from jobs.run.status import RunStatus

REPORT_VERSION = 3  # 3: quarantine_reasons
# Validation results (jobs/validate/) live beside the run reports: <run_id>.quality.json.
RESULTS_SUFFIX = ".quality.json"


def shown(watermark: str | None) -> str:
    """A watermark as a person reads it: Spark's before any event time passed it is the epoch."""
    if watermark is None or watermark.startswith("1970-01-01T00:00:00"):
        return "none yet"
    return watermark


class RetentionDone(BaseModel):
    """What a run's retention did to landed files (the run report's `retention`)."""

    deleted: int = 0
    archived: int = 0
    already_gone: int = 0  # named by the ledger, but no longer landed
    left_alone: list[str] = []  # named by the ledger, but now a link or outside the landing: never touched
    through_batch: int | None = None  # every batch up to this one has been seen to
    archive: str | None = None
    builds_removed: list[str] = []  # builds a rebuild switched away from, kept long enough
    quarantine_batches_removed: int = 0  # batches whose quarantined records were removed
    runs_removed: int = 0  # run reports removed (with their validation results)

    @property
    def did_something(self) -> bool:
        done = (self.deleted, self.archived, self.builds_removed, self.quarantine_batches_removed, self.runs_removed)
        return any(done) or bool(self.left_alone)

    def describe(self) -> str:
        done = [f"{n} {what}" for what, n in (("deleted", self.deleted), ("archived", self.archived)) if n]
        where = f" to {self.archive}" if self.archived else ""
        landed = f"{', '.join(done)} landed file(s){where}, of batches up to {self.through_batch}" if done else ""
        removed = f"build(s) {', '.join(self.builds_removed)} removed" if self.builds_removed else ""
        quarantine = (
            f"the quarantined records of {self.quarantine_batches_removed} batch(es) removed"
            if self.quarantine_batches_removed
            else ""
        )
        runs = f"{self.runs_removed} old run report(s) removed" if self.runs_removed else ""
        alone = (
            f"{len(self.left_alone)} landed path(s) left alone (a link, or outside the landing once resolved)"
            if self.left_alone
            else ""
        )
        return "retention: " + "; ".join(part for part in (landed, removed, quarantine, runs, alone) if part)


class RuleCount(BaseModel):
    """A declared rule's outcome in a run (the run report's `rules`)."""

    action: str | None  # warn, quarantine or fail; None: a rule no longer declared (an earlier run's batch)
    violations: int = 0  # rows that broke it


class QuarantineReason(BaseModel):
    """Rows a run quarantined for one reason (the run report's `quarantine_reasons`)."""

    rows: int = 0
    last_batch: int  # the newest batch with such a row: its quarantine folder holds one


class RunReport(BaseModel):
    report_version: int = REPORT_VERSION
    run_id: str
    pipeline: str
    trigger: str
    started_at: str
    ended_at: str | None = None
    duration_s: float | None = None
    status: RunStatus = RunStatus.RUNNING
    error: str | None = None
    # Failed on its data (a `fail` rule, a record Spark cannot get past): every rerun would too.
    stopped_on_data: bool = False
    batches: int = 0
    batch_ids: list[int] = Field(default_factory=list)
    # Batches an interrupted earlier run committed but did not get to account.
    recovered_batch_ids: list[int] = Field(default_factory=list)
    input_files: int = 0
    input_rows: int = 0
    used_rows: int = 0
    quarantined_rows: int = 0
    filtered_rows: int = 0  # usable, but not what the declaration's `where` keeps
    late_rows_dropped: int = 0
    rescued_rows: int = 0  # usable rows with a value rescued into _rescued_data
    # Each declared rule, what a row breaking it meets, and how many did (jobs/flow/rules.py).
    rules: dict[str, RuleCount] = Field(default_factory=dict)
    # Reason -> its quarantined rows, as the batches counted them; None: some batch's are not
    # known (accounted before they were counted), and the report says so.
    quarantine_reasons: dict[str, QuarantineReason] | None = Field(default_factory=dict)
    duplicates_dropped: int | None = 0  # None: some batch's count is unknown
    output_rows: int | None = 0  # None: some batch's count is unknown
    # A reader of another pipeline's table: that pipeline's batch (of a Delta table: version)
    # -> the rows this run read of it ("?": one its log no longer tells apart); None for a
    # landing's reader.
    upstream_batches: dict[str, int] | None = None
    upstream_unit: Literal["batch", "version"] = "batch"
    owed: list[str] = Field(default_factory=list)  # a Delta table's rewrites it has not redone (run/owed.py)
    watermark: str | None = None
    state_rows: int | None = None
    # Admission control: at most this much new input per batch, and what set it (jobs/flow/admission.py).
    batch_limits: dict[str, Any] | None = None
    # What each batch after the first took, when the run sized them (the default's limits).
    batch_sizes: list[BatchSize] = Field(default_factory=list)
    # Output files an interrupted batch wrote but never committed, removed once the query stopped,
    # and files past the table's retention that Spark's sink log dropped (jobs/run/audit.py).
    uncommitted_files_removed: int = 0
    expired_output_files_removed: int = 0
    retention: RetentionDone = Field(default_factory=RetentionDone)  # to landed files (jobs/run/retention.py)
    skipped_files: SkippedFiles = Field(default_factory=SkippedFiles)  # landed, never to be read (run/audit.py)
    missing_files: list[str] = Field(default_factory=list)  # of its batches, gone before they were accounted
    found_late: list[str] = Field(default_factory=list)  # new in a day a run no longer lists (run/pending.py)
    # Files sharing a modification time with a file of another batch (jobs/run/audit.py).
    tied_files: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)  # what it got wrong though it succeeded (run/warnings.py)
    metrics: dict[str, float] = Field(default_factory=dict)  # measured (jobs/history/anomalies.py run_metrics)
    anomalies: list[Anomaly] = Field(default_factory=list)  # metrics outside what its history expects
    anomalies_fail: bool = False  # the declaration's `quality: {anomalies: fail}`: exit 8 with any
    # Why its validation did not finish: its rows wait for a later one (jobs/validate/result.py).
    not_validated: str | None = None
    locations: dict[str, str] = Field(default_factory=dict)
    link: str | None = None  # where the run was started from: the Airflow task's page, when Airflow ran it
    spark_log: str | None = None  # the file with Spark's log and stack traces (one per Airflow task)

    _upgrade = model_validator(mode="before")(from_version_1)

    @model_validator(mode="before")
    @classmethod
    def _reasons_unrecorded_before_version_3(cls, raw: Any) -> Any:
        if not isinstance(raw, dict) or "quarantine_reasons" in raw:
            return raw
        stored_before = raw.get("report_version", 1 if "aggregated_rows" in raw else REPORT_VERSION) < 3
        return {**raw, "quarantine_reasons": None} if stored_before else raw

    _accounts: list[BatchAccount] = PrivateAttr(default_factory=list)  # the batches this run accounted

    def read_upstream(self, committed_by: dict[str, int | None], unit: Literal["batch", "version"]) -> None:
        """The rows this run read of each batch (or version) of the upstream's table, `committed_by`
        telling which committed each file (CheckpointLog.committing_batches)."""
        self.upstream_unit = unit
        read: dict[int | None, int] = {}
        for account in self._accounts:
            for file in account.files or []:
                batch = committed_by.get(file.path)
                read[batch] = read.get(batch, 0) + file.input_rows
        told = {str(batch): rows for batch, rows in sorted((b, n) for b, n in read.items() if b is not None)}
        self.upstream_batches = told | ({"?": read[None]} if None in read else {})

    def add_batches(self, accounts: list[BatchAccount], distinct_keys: int | None = None) -> None:
        self._accounts += accounts
        self.tied_files = tied_files(self._accounts)
        for account in accounts:
            self.batch_ids.append(account.batch_id)
            self.input_files += account.input_files
            self.input_rows += account.input_rows
            self.used_rows += account.used_rows
            self.quarantined_rows += account.quarantined_rows
            self.filtered_rows += account.filtered_rows
            self.late_rows_dropped += account.late_rows_dropped
            self.rescued_rows += account.rescued_rows
            for rule, n in account.violations.items():
                self.rules.setdefault(rule, RuleCount(action=None)).violations += n
            self._add_reasons(account)
            self.duplicates_dropped = _sum_known(self.duplicates_dropped, account.duplicates_dropped)
            self.output_rows = _sum_known(self.output_rows, account.output_rows)
            self.missing_files += account.missing_files
        self.batches, self.metrics = len(self.batch_ids), run_metrics(self._accounts, distinct_keys)

    def _add_reasons(self, account: BatchAccount) -> None:
        if self.quarantine_reasons is None or (account.quarantine_reasons is None and account.quarantined_rows):
            self.quarantine_reasons = None  # some rows' reasons were never counted
            return
        for reason, rows in (account.quarantine_reasons or {}).items():
            found = self.quarantine_reasons.setdefault(reason, QuarantineReason(last_batch=account.batch_id))
            found.rows += rows
            found.last_batch = max(found.last_batch, account.batch_id)

    @property
    def rows_balance(self) -> bool:
        accounted = self.used_rows + self.quarantined_rows + self.filtered_rows + self.late_rows_dropped
        return self.input_rows == accounted + (self.duplicates_dropped or 0)

    def finish(self, status: RunStatus, error: str | None = None) -> None:
        ended = datetime.now(UTC)
        self.ended_at = ended.isoformat(timespec="seconds")
        self.duration_s = round((ended - datetime.fromisoformat(self.started_at)).total_seconds(), 2)
        self.status = status
        self.error = error

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @property
    def used_none(self) -> bool:
        """Whether the run read rows and used none of them: every one quarantined (a late or a
        duplicate row was judged, and counts as used). Not a success, though committed."""
        judged = self.used_rows + self.filtered_rows + self.late_rows_dropped + (self.duplicates_dropped or 0)
        return self.input_rows > 0 and judged == 0

    def used_none_said(self) -> str:
        """'used none of its 7,702 rows: all quarantined, most for wrong_field_type (7,702 rows)'."""
        top = max((self.quarantine_reasons or {}).items(), key=lambda item: (item[1].rows, item[0]), default=None)
        return f"used none of its {self.input_rows:,} rows: all quarantined" + (
            f", most for {top[0]} ({top[1].rows:,} rows)" if top else ""
        )

    def ended_said(self) -> str:
        """Its status; a reader that owes an upstream's rewrite says so ('succeeded, owes ...')."""
        if self.status == RunStatus.SUCCEEDED and self.owed:
            return f"succeeded, owes {len(self.owed)} upstream rewrite(s) (not a success until redone)"
        return str(self.status)

    def summary(self) -> str:
        """A few lines for a person reading a terminal or a task log."""
        ended = self.used_none_said() if self.status == RunStatus.SUCCEEDED and self.used_none else self.ended_said()
        head = f"{self.pipeline} run {self.run_id}: {ended} in {self.duration_s}s ({self.trigger})"
        if self.error:
            return f"{head}\n  error: {self.error}"
        skipped = self._said_of_files()
        if not self.batch_ids:
            return "\n".join([head, f"  no new files: nothing written; watermark {shown(self.watermark)}", *skipped])
        recovered = f" (incl. {len(self.recovered_batch_ids)} recovered)" if self.recovered_batch_ids else ""
        output = "unknown" if self.output_rows is None else self.output_rows
        duplicates = "unknown" if self.duplicates_dropped is None else self.duplicates_dropped
        return "\n".join(
            [
                head,
                f"  batches {self.batches}{recovered}, files {self.input_files}, input rows {self.input_rows}",
                f"  used {self.used_rows} + quarantined {self.quarantined_rows}"
                + (f" + filtered {self.filtered_rows}" if self.filtered_rows else "")
                + f" + late {self.late_rows_dropped}"
                + (f" + duplicates {duplicates}" if duplicates else "")
                + f" (of {self.input_rows} input rows)"
                + (f"; {self.rescued_rows} with a value rescued" if self.rescued_rows else ""),
                f"  output rows {output}, state rows {self.state_rows}, watermark {shown(self.watermark)}",
                *(
                    [f"  batch sizes: {describe_sizes(self.batch_sizes, self.batch_limits or {})}"]
                    if self.batch_sizes
                    else []
                ),
                *([f"  rules: {self.describe_rules()}"] if self.rules else []),
                *([f"  read of the upstream table: {self._upstream_read()}"] if self.upstream_batches else []),
                *skipped,
            ]
        )

    def _upstream_read(self) -> str:
        unit = self.upstream_unit
        said = [f"{unit} {batch} {rows} rows" for batch, rows in (self.upstream_batches or {}).items()]
        return ", ".join(said[:5]) + (f" and {len(said) - 5} more {unit}s" if len(said) > 5 else "")

    def _said_of_files(self) -> list[str]:
        """The summary's lines on its warnings, what it owes, and the files it passed over, tied or lost."""
        said = [f"  warning: {warning}" for warning in self.warnings]
        said += [f"  {anomaly.describe()}" for anomaly in self.anomalies]
        said += [f"  owes: {line}" for line in self.owed]
        said += [f"  {self.skipped_files.describe()}"] if self.skipped_files else []
        said += [f"  {self.retention.describe()}"] if self.retention.deleted or self.retention.archived else []
        if self.tied_files:
            said.append(
                f"  {len(self.tied_files)} file(s) in different batches had the same modification time: "
                f'{file_names(self.tied_files)} (Spark chose their order; see docs/layout.md, "Landing files")'
            )
        if self.missing_files:
            said.append(
                f"  {len(self.missing_files)} landed file(s) gone before they were accounted: "
                f"{file_names(self.missing_files)} (their rows are in no count above)"
            )
        return said

    def describe_rules(self) -> str:
        """Each rule's violations and action, in one line ('known_event 3 (quarantine), ...')."""
        return ", ".join(
            f"{name} {n.violations} ({n.action or 'no longer declared'})" for name, n in self.rules.items()
        )


def _sum_known(total: int | None, part: int | None) -> int | None:
    return None if total is None or part is None else total + part


def report_uri(runs: str, run_id: str) -> str:
    return join(runs, f"{run_id}.json")


def save(report: RunReport, runs: str, extra_path: str | None = None) -> str:
    """Store the report in the runs folder (and at `extra_path` too); returns its URI."""
    uri = report_uri(runs, report.run_id)
    fs.write_json(uri, report.to_dict())
    if extra_path:
        fs.write_json(normalize(extra_path), report.to_dict())
    return uri


def load_report(runs: str, run_id: str) -> RunReport:
    return RunReport.model_validate(fs.read_json(report_uri(runs, run_id)))


def has_committed_batches(reports: list[RunReport]) -> bool:
    """Whether any of the runs committed a batch: until one has, there is no table to validate."""
    return any(report.batch_ids for report in reports)


def load_reports(runs: str) -> list[RunReport]:
    """Every stored run report of a pipeline, oldest first."""
    return recent_reports(runs, None)


def recent_reports(runs: str, count: int | None) -> list[RunReport]:
    """The last `count` stored run reports of a pipeline (all: None), oldest first (run ids
    sort by start time)."""
    names = sorted(n for n in fs.list_names(runs) if n.endswith(".json") and not n.endswith(RESULTS_SUFFIX))
    if count is not None:
        names = names[-count:]
    return [RunReport.model_validate(fs.read_json(join(runs, name))) for name in names]


def last_state_rows(runs: str) -> int | None:
    """The state rows the latest run that knew them left (None if none did, or unreadable)."""
    try:
        earlier = recent_reports(runs, 10)
    except (StorageError, ValueError):
        return None
    return next((r.state_rows for r in reversed(earlier) if r.state_rows is not None), None)
