"""What the event log holds (schema version 1): a row of `runs` per run and per validation
(made by jobs/validate/result.py), a row of `batches` per batch a run accounted. The run reports stay as they are; these rows
are built from them, so that the two never disagree.

A column is only ever added (readers of an older version get nulls); a change of meaning
is a new `schema_version`. docs/history.md lists every column.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from jobs.accounting.accounts import BatchAccount
    from jobs.run.report import RunReport

SCHEMA_VERSION = 1

_TIME = pa.timestamp("us", tz="UTC")
_COUNTS = pa.list_(pa.struct([("name", pa.string()), ("rows", pa.int64())]))

# A run's account and a batch's, alike (docs/accounting.md); null: a count not known.
_ACCOUNT = [
    (name, pa.int64())
    for name in (
        "input_files",
        "input_rows",
        "used_rows",
        "quarantined_rows",
        "filtered_rows",
        "late_rows",
        "duplicate_rows",
        "output_rows",
    )
]

_ANOMALY = pa.struct(
    [
        ("metric", pa.string()),
        ("value", pa.float64()),
        ("expected_low", pa.float64()),
        ("expected_high", pa.float64()),
        ("compared_runs", pa.list_(pa.string())),
        ("compared_with", pa.string()),
    ]
)

RUNS = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("pipeline", pa.string()),
        ("record", pa.string()),  # run, or validation
        ("run_id", pa.string()),  # the run's; a validation's: the newest run it validated
        ("started_at", _TIME),
        ("ended_at", _TIME),
        ("duration_s", pa.float64()),
        ("status", pa.string()),  # a run's (succeeded, failed, refused, stopped); a validation's verdict
        ("error", pa.string()),
        ("trigger", pa.string()),
        ("batches", pa.int64()),
        *_ACCOUNT,
        ("state_rows", pa.int64()),
        ("watermark", _TIME),
        ("quarantine_reasons", _COUNTS),  # reason -> rows
        ("rule_violations", _COUNTS),  # rule -> rows that broke it
        ("warnings", pa.list_(pa.string())),
        # Measured: the input's distinct_keys, the output's null_share:<column>; with its account,
        # what anomalies are judged on (jobs/history/anomalies.py).
        ("metrics", pa.list_(pa.struct([("name", pa.string()), ("value", pa.float64())]))),
        ("anomalies", pa.list_(_ANOMALY)),
        # A validation's: what it checked (run: one run's files; table: the whole table).
        ("validation_id", pa.string()),
        ("validation_scope", pa.string()),
        ("validated_runs", pa.list_(pa.string())),
        ("validated_rows", pa.int64()),
        ("checks_passed", pa.int64()),
        ("checks_failed", pa.int64()),
        ("checks_skipped", pa.int64()),
    ]
)

BATCHES = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("pipeline", pa.string()),
        ("run_id", pa.string()),  # the run that accounted it
        ("batch_id", pa.int64()),
        ("committed_at", _TIME),
        *_ACCOUNT,
        ("late_watermark", _TIME),  # rows at or before it were late in this batch
        ("quarantine_reasons", _COUNTS),
    ]
)


def time_of(text: str | None) -> datetime | None:
    """A report's ISO time as a timestamp of the log."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _counts(values: dict[str, int] | None) -> list[dict[str, Any]]:
    return [{"name": name, "rows": rows} for name, rows in sorted((values or {}).items())]


def _account_of(counted: RunReport | BatchAccount) -> dict[str, int | None]:
    """The account columns of a run report or a batch's account (the same names there)."""
    fields = {"late_rows": "late_rows_dropped", "duplicate_rows": "duplicates_dropped"}
    return {name: getattr(counted, fields.get(name, name)) for name, _ in _ACCOUNT}


def run_row(report: RunReport) -> pa.Table:
    """The run's row of `runs`."""
    reasons = {reason: counted.rows for reason, counted in (report.quarantine_reasons or {}).items()}
    row = {
        "schema_version": SCHEMA_VERSION,
        "pipeline": report.pipeline,
        "record": "run",
        "run_id": report.run_id,
        "started_at": time_of(report.started_at),
        "ended_at": time_of(report.ended_at),
        "duration_s": report.duration_s,
        "status": str(report.status),
        "error": report.error,
        "trigger": report.trigger,
        "batches": report.batches,
        **_account_of(report),
        "state_rows": report.state_rows,
        "watermark": time_of(report.watermark),
        "quarantine_reasons": _counts(reasons),
        "rule_violations": _counts({name: rule.violations for name, rule in report.rules.items()}),
        "warnings": list(report.warnings),
        "metrics": [{"name": name, "value": value} for name, value in sorted(report.metrics.items())],
        "anomalies": [anomaly.model_dump() for anomaly in report.anomalies],
    }
    return pa.Table.from_pylist([row], schema=RUNS)


def batch_rows(pipeline: str, accounts: list[BatchAccount]) -> pa.Table:
    """The rows of `batches` for the batches a run accounted."""
    rows = [
        {
            "schema_version": SCHEMA_VERSION,
            "pipeline": pipeline,
            "run_id": account.run_id,
            "batch_id": account.batch_id,
            "committed_at": time_of(account.committed_at),
            **_account_of(account),
            "late_watermark": datetime.fromtimestamp(account.late_watermark_ms / 1000, tz=UTC)
            if account.late_watermark_ms > 0
            else None,  # no watermark yet
            "quarantine_reasons": _counts(account.quarantine_reasons),
        }
        for account in accounts
    ]
    return pa.Table.from_pylist(rows, schema=BATCHES)
