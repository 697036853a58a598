"""Run reports: what one run did, in numbers a person can check."""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from jobs import storage
from jobs.accounting import BatchAccount
from jobs.storage import Locations, join

# Validation results (jobs/quality.py) live beside the run reports: <run_id>.quality.json.
RESULTS_SUFFIX = ".quality.json"


def new_run_id(now: datetime) -> str:
    """Sortable by start time, unique across hosts."""
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


@dataclass
class RunReport:
    run_id: str
    pipeline: str
    trigger: str
    started_at: str
    ended_at: str | None = None
    duration_s: float | None = None
    status: str = "running"
    error: str | None = None
    batches: int = 0
    batch_ids: list[int] = field(default_factory=list)
    # Batches an interrupted earlier run committed but did not get to account.
    recovered_batch_ids: list[int] = field(default_factory=list)
    input_files: int = 0
    input_rows: int = 0
    aggregated_rows: int = 0
    quarantined_rows: int = 0
    late_rows_dropped: int = 0
    # Repeats a deduplicating pipeline dropped (None: some batch's count is unknown).
    duplicates_dropped: int | None = 0
    output_rows: int | None = 0
    watermark: str | None = None
    state_rows: int | None = None
    locations: dict[str, str] = field(default_factory=dict)

    def add_batches(self, accounts: list[BatchAccount]) -> None:
        for account in accounts:
            self.batch_ids.append(account.batch_id)
            self.input_files += account.input_files
            self.input_rows += account.input_rows
            self.aggregated_rows += account.aggregated_rows
            self.quarantined_rows += account.quarantined_rows
            self.late_rows_dropped += account.late_rows_dropped
            if account.duplicates_dropped is None or self.duplicates_dropped is None:
                self.duplicates_dropped = None
            else:
                self.duplicates_dropped += account.duplicates_dropped
            if account.output_rows is None or self.output_rows is None:
                self.output_rows = None
            else:
                self.output_rows += account.output_rows
        self.batches = len(self.batch_ids)

    @property
    def rows_balance(self) -> bool:
        accounted = self.aggregated_rows + self.quarantined_rows + self.late_rows_dropped
        return self.input_rows == accounted + (self.duplicates_dropped or 0)

    def finish(self, status: str, error: str | None = None) -> None:
        ended = datetime.now(UTC)
        started = datetime.fromisoformat(self.started_at)
        self.ended_at = ended.isoformat(timespec="seconds")
        self.duration_s = round((ended - started).total_seconds(), 2)
        self.status = status
        self.error = error

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """A few lines for a person reading a terminal or a task log."""
        head = f"{self.pipeline} run {self.run_id}: {self.status} in {self.duration_s}s ({self.trigger})"
        if self.error:
            return f"{head}\n  error: {self.error}"
        if not self.batch_ids:
            return f"{head}\n  no new files: nothing written; watermark {self.watermark}"
        recovered = f" (incl. {len(self.recovered_batch_ids)} recovered)" if self.recovered_batch_ids else ""
        output = "unknown" if self.output_rows is None else self.output_rows
        duplicates = "unknown" if self.duplicates_dropped is None else self.duplicates_dropped
        return "\n".join(
            [
                head,
                f"  batches {self.batches}{recovered}, files {self.input_files}, input rows {self.input_rows}",
                f"  aggregated {self.aggregated_rows} + quarantined {self.quarantined_rows} "
                f"+ late {self.late_rows_dropped}"
                + (f" + duplicates {duplicates}" if duplicates else "")
                + f" (of {self.input_rows} input rows)",
                f"  output rows {output}, state rows {self.state_rows}, watermark {self.watermark}",
            ]
        )


def report_uri(locations: Locations, run_id: str) -> str:
    return join(locations.runs, f"{run_id}.json")


def save(report: RunReport, locations: Locations, extra_path: str | None = None) -> str:
    """Store the report under the runs location (and at `extra_path` too); returns its URI."""
    uri = report_uri(locations, report.run_id)
    storage.write_json(uri, report.to_dict())
    if extra_path:
        storage.write_json(storage.normalize(extra_path), report.to_dict())
    return uri


def load_reports(locations: Locations) -> list[dict[str, Any]]:
    """Every stored run report of a pipeline, oldest first."""
    names = [n for n in storage.list_names(locations.runs) if n.endswith(".json") and not n.endswith(RESULTS_SUFFIX)]
    return [json.loads(storage.read_text(join(locations.runs, n))) for n in names]


def load_validations(locations: Locations) -> list[dict[str, Any]]:
    """Every stored validation result of a pipeline, oldest first."""
    names = [n for n in storage.list_names(locations.runs) if n.endswith(RESULTS_SUFFIX)]
    found = [json.loads(storage.read_text(join(locations.runs, n))) for n in names]
    return sorted(found, key=lambda v: v["validated_at"])
