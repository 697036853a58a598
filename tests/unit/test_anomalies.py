"""Anomalies judged on generated histories: a steady one (with and without a daily rhythm)
flags nothing when replayed run by run; a run whose input halves, whose quarantine share
jumps, whose output's null share rises, or whose keys collapse is flagged, each alone."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from jobs.history.anomalies import Sample, judge, metrics_of

MIN_RUNS = 8
START = datetime(2026, 11, 2, tzinfo=UTC)  # a Monday


def _row(at: datetime, rng: random.Random, rows: float, quarantined: float = 0.001, nulls: float = 0.02) -> dict:
    """A run's row of the log as a steady producer makes it: every count within a few percent."""
    input_rows = max(1, round(rows * rng.uniform(0.9, 1.1)))
    bad = round(input_rows * quarantined * rng.uniform(0.5, 1.5))
    return {
        "run_id": at.strftime("%Y%m%dT%H%M%SZ"),
        "started_at": at,
        "ended_at": at + timedelta(seconds=40),
        "duration_s": rng.uniform(30, 50),
        "input_rows": input_rows,
        "used_rows": input_rows - bad,
        "output_rows": round((input_rows - bad) / 10),
        "quarantined_rows": bad,
        "filtered_rows": 0,
        "late_rows": round(input_rows * 0.002 * rng.random()),
        "duplicate_rows": 0,
        "watermark": at - timedelta(minutes=rng.uniform(9, 11)),
        "quarantine_reasons": [{"name": "malformed_json", "rows": bad}] if bad else [],
        "metrics": [
            {"name": "distinct_keys", "value": round(input_rows / 4 * rng.uniform(0.95, 1.05))},
            {"name": "null_share:country", "value": nulls * rng.uniform(0.8, 1.2)},
        ],
    }


def _sample(row: dict) -> Sample:
    return Sample(row["run_id"], row["started_at"], metrics_of(row))


def _replayed(rows: list[dict]) -> list[tuple[str, list[str]]]:
    """Each run judged against those before it, as the runs would have been: what each flagged."""
    samples = [_sample(row) for row in rows]
    flagged = []
    for at, sample in enumerate(samples):
        found = judge(sample, samples[:at], MIN_RUNS)
        if found:
            flagged.append((sample.run_id, [anomaly.describe() for anomaly in found]))
    return flagged


def _hourly(runs: int, seed: int, rows=lambda at: 10_000) -> list[dict]:
    rng = random.Random(seed)
    return [_row(START + timedelta(hours=i), rng, rows(START + timedelta(hours=i))) for i in range(runs)]


@pytest.mark.parametrize("seed", range(3))
def test_a_steady_history_replayed_flags_nothing(seed):
    assert _replayed(_hourly(200, seed)) == []


def test_a_daily_rhythm_is_learnt_and_flags_nothing():
    """Busy days, quiet nights: each hour held against the same hour of the days before."""
    rhythm = _hourly(24 * 14, 7, rows=lambda at: 10_000 if 8 <= at.hour < 20 else 1_000)
    flagged = _replayed(rhythm)
    # Until each hour has MIN_RUNS days of its own, a night is held against every run before it.
    assert all(run_id < "20261110" for run_id, _ in flagged), flagged[-3:]
    # Past those days, a busy night stands out against its own hour, though not against the day.
    history = [_sample(row) for row in rhythm]
    night = _sample({**rhythm[-24], "started_at": rhythm[-24]["started_at"] + timedelta(days=1), "input_rows": 10_000})
    found = {anomaly.metric: anomaly for anomaly in judge(night, history, MIN_RUNS)}
    assert found["input_rows"].compared_with == "hour 00h"
    assert len(found["input_rows"].compared_runs) == 14


def _steady_then(change: dict) -> tuple[list[str], dict]:
    rows = _hourly(40, 11)
    last = {**rows[-1], "started_at": rows[-1]["started_at"] + timedelta(hours=1), "run_id": "last", **change}
    found = judge(_sample(last), [_sample(row) for row in rows], MIN_RUNS)
    return sorted(anomaly.metric for anomaly in found), {anomaly.metric: anomaly for anomaly in found}


def test_a_run_whose_input_halves_is_flagged_on_its_counts_alone():
    metrics, found = _steady_then({"input_rows": 5_000, "used_rows": 4_995, "output_rows": 500})
    assert metrics == ["input_rows", "output_rows", "used_rows"]
    halved = found["input_rows"]
    assert halved.value == 5_000 and 6_000 < halved.expected_low < halved.expected_high < 14_000
    assert len(halved.compared_runs) == 40 and halved.compared_with == "all"
    assert halved.describe().startswith("anomaly: input_rows 5,000, expected ")


def test_a_run_whose_quarantine_share_jumps_is_flagged_on_its_shares_alone():
    metrics, found = _steady_then(
        {"quarantined_rows": 400, "quarantine_reasons": [{"name": "malformed_json", "rows": 400}]}
    )
    assert metrics == ["quarantine_share", "quarantine_share:malformed_json"]
    assert found["quarantine_share"].value == pytest.approx(400 / 10_000, rel=0.2)
    assert "quarantine_share 4." in found["quarantine_share"].describe()


def test_a_run_whose_output_null_share_rises_is_flagged_on_it_alone():
    metrics, found = _steady_then({"metrics": [{"name": "null_share:country", "value": 0.2}]})
    assert metrics == ["null_share:country"]
    assert found["null_share:country"].expected_high < 0.05


def test_a_run_whose_keys_collapse_is_flagged_on_them_alone():
    """As many events as ever, from a tenth of the users."""
    metrics, found = _steady_then({"metrics": [{"name": "distinct_keys", "value": 250}]})
    assert metrics == ["distinct_keys"]
    assert found["distinct_keys"].expected_low > 1_500


def test_shares_and_times_that_fall_are_no_anomaly():
    metrics, _ = _steady_then({"quarantined_rows": 0, "quarantine_reasons": [], "duration_s": 1.0})
    assert metrics == []


def test_nothing_is_judged_before_enough_runs():
    rows = _hourly(MIN_RUNS, 3)
    halved = {**rows[-1], "input_rows": 10}
    assert judge(_sample(halved), [_sample(row) for row in rows[:-1]], MIN_RUNS) == []
    assert judge(_sample(halved), [_sample(row) for row in rows], MIN_RUNS) != []


def test_the_null_share_of_what_a_run_wrote_is_read_from_its_files_footers(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.accounting.accounts import BatchAccount
    from jobs.history.anomalies import run_metrics
    from jobs.lake import fs

    written = tmp_path / "part-0.parquet"
    table = pa.table({"country": ["de", None, None, "fr"], "n": [1, 2, 3, None], "nested": [{"a": None}] * 4})
    pq.write_table(table, written, row_group_size=3)  # two row groups: their counts are summed
    assert fs.parquet_counts(str(written)) == (4, {"country": 2, "n": 1})  # a struct's leaves count values

    def account(batch_id: int, rows: int, nulls: dict | None) -> BatchAccount:
        counts = dict.fromkeys(("input_files", "input_rows", "used_rows", "quarantined_rows", "late_rows_dropped"), 0)
        return BatchAccount(batch_id=batch_id, late_watermark_ms=0, output_rows=rows, output_nulls=nulls, **counts)

    run = [account(0, 4, {"country": 2, "n": 1}), account(1, 6, {"country": 0, "n": 0}), account(2, 0, {})]
    assert run_metrics(run) == {"null_share:country": 0.2, "null_share:n": 0.1}
    assert run_metrics([*run, account(2, 1, None)]) == {}  # a batch accounted before nulls were counted
    # The keys the query counted, whatever the footers say; none without batches.
    assert run_metrics([*run, account(2, 1, None)], 7) == {"distinct_keys": 7.0}
    assert run_metrics([], 7) == {}
