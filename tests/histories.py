"""The history of a shipped pipeline on its demo samples, for the pipeline tests: each
arrival run in this process, the last one by a fresh process (a restart), then once more
with nothing new; and the check of that history against an independent model.

One restart process serves every pipeline of a module (tests/restart.py), so one JVM
start covers all their restarts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from pyspark.errors import AnalysisException

from demo import samples
from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger, with_recorded_schema
from jobs.columns import RESCUED_DATA
from jobs.flow.patterns import pattern_of
from jobs.flow.sink import read_table
from jobs.lake import fs
from jobs.lake.layout import Locations, join
from jobs.run.report import RunReport, load_reports
from jobs.validate.result import load_results
from jobs.validate.validation import validate_run
from tests.helpers import REPO, all_lines, assert_run_matches, delta_rs_rows, land, run_pipeline


def _cell(value):
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC)
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)  # an exact sum of whole numbers (decimal(38,0))
    return value


def ordered(rows: list[tuple]) -> list[tuple]:
    """Rows in one order whatever their values (None, dicts): the tables' and the models'."""
    return sorted(rows, key=repr)


def table(spark, pipeline: declare.PipelineBase, locations: Locations) -> list[tuple]:
    """The committed table (read through the sink log by Spark itself), in UTC, rescued
    data as a dict, ordered()."""
    columns = pattern_of(with_recorded_schema(pipeline, Ledger(locations.ledger))).output_columns()
    try:
        rows = read_table(spark, locations.output).select(*columns).collect()
    except AnalysisException:  # no committed file yet: nothing to infer a schema from
        return []
    rows = ordered(_readable(rows, columns))
    if pipeline.output.format == "delta":  # what a reader outside Spark sees is the same table
        assert ordered(_readable(delta_rs_rows(locations.output, columns), columns)) == rows, locations.output
    return rows


def _readable(rows, columns: list[str]) -> list[tuple]:
    rows = [tuple(_cell(value) for value in row) for row in rows]
    if RESCUED_DATA in columns:
        rows = [(*row[:-1], json.loads(row[-1]) if row[-1] else None) for row in rows]
    return rows


# The users dimension of clickstream_enriched: edited between runs (user3 upgrades, user4 signs up).
USERS = {"user1": ("DE", "pro"), "user2": ("FR", "free"), "user3": ("US", "team")}
USERS_LATER = {**USERS, "user3": ("US", "pro"), "user4": ("NL", "free")}


def write_users(locations: Locations, users: dict[str, tuple[str, str]]) -> None:
    text = "user_id,country,plan\n" + "".join(f"{u},{c},{p}\n" for u, (c, p) in users.items())
    fs.write_text(join(locations.dimensions, "users.csv"), text)


# What to do before each arrival's run, by pipeline and arrival number (from 1).
BEFORE_RUN: dict[str, Callable[[Locations, int], None]] = {
    "clickstream_enriched": lambda locations, number: write_users(locations, USERS if number < 3 else USERS_LATER),
}


@dataclass
class Run:
    """One run of a pipeline as it happened: its report, validation verdict, the table after it."""

    report: RunReport
    verdict: str | None
    table: list[tuple]


@dataclass
class History:
    pipeline: declare.PipelineBase
    locations: Locations
    runs: list[Run] = field(default_factory=list)  # one per arrival; the last by the restart process
    again: Run | None = None  # once more, with nothing new
    validated: bool = True  # each run validated its output (a verdict per run)
    error: BaseException | None = None

    def check(self) -> None:
        if self.error is not None:
            raise self.error


def run_histories(spark, root: str, names: list[str], arrivals_of=samples.arrivals) -> dict[str, History]:
    """Each named pipeline through its arrivals (`arrivals_of(name)`: the demo's samples by
    default) on one root: in this process, then the last arrival of all of them by one
    fresh process, then nothing new again."""
    found = {name: History(declare.load(name), Locations.resolve(name, root=root)) for name in names}

    def in_process(history: History) -> Run:
        report = run_pipeline(spark, history.pipeline, history.locations)
        verdict = validate_run(spark, history.pipeline, history.locations, report).status
        return Run(report, verdict, table(spark, history.pipeline, history.locations))

    for history in found.values():
        arrivals = arrivals_of(history.pipeline.name)
        try:
            for number, arrival in enumerate(arrivals[:-1], start=1):
                BEFORE_RUN.get(history.pipeline.name, lambda *_: None)(history.locations, number)
                land(history.locations.landing, arrival)
                history.runs.append(in_process(history))
            BEFORE_RUN.get(history.pipeline.name, lambda *_: None)(history.locations, len(arrivals))
            land(history.locations.landing, arrivals[-1])
        except Exception as error:  # noqa: BLE001 - the pipeline's own test reports it
            history.error = error

    ready = [name for name, history in found.items() if history.error is None]
    restart = subprocess.run(
        [sys.executable, "-m", "tests.restart", root, *ready], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    codes = json.loads(restart.stdout.strip().splitlines()[-1]) if restart.stdout.strip() else {}
    for name in ready:
        history = found[name]
        if codes.get(name) != 0:
            history.error = AssertionError(
                f"restart of {name}: exit {codes.get(name)}\n{restart.stdout}{restart.stderr}"
            )
            continue
        results = {r.validation_id: r for r in load_results(history.locations.runs)}
        report = load_reports(history.locations.runs)[-1]
        verdict = results[report.run_id].status if report.run_id in results else None
        history.runs.append(Run(report, verdict, table(spark, history.pipeline, history.locations)))
        try:
            history.again = in_process(history)
        except Exception as error:  # noqa: BLE001 - the pipeline's own test reports it
            history.error = error
    return found


def run_histories_in_processes(spark, root: str, names: list[str], env: dict[str, str], arrivals: int) -> dict:
    """Each named pipeline through its first `arrivals` sample arrivals, every run by a fresh
    process under `env` (e.g. SPARK_MASTER for a cluster): one process per arrival runs all
    of them, without validation (no run with nothing new after). Tables are read here."""
    found = {name: History(declare.load(name), Locations.resolve(name, root=root), validated=False) for name in names}
    for number in range(1, arrivals + 1):
        for name, history in found.items():
            BEFORE_RUN.get(name, lambda *_: None)(history.locations, number)
            land(history.locations.landing, samples.arrivals(name)[number - 1])
        process = subprocess.run(
            [sys.executable, "-m", "tests.restart", "--no-validate", root, *names],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert process.returncode == 0, f"run {number}: exit {process.returncode}\n{process.stdout}{process.stderr}"
        for history in found.values():
            report = load_reports(history.locations.runs)[-1]
            history.runs.append(Run(report, None, table(spark, history.pipeline, history.locations)))
    return found


def assert_history_matches(history: History, model, arrivals, before_run=lambda number: None) -> list:
    """Each run's accounting, state rows, verdict and table equal the model's; then a run with
    nothing new (if there was one) runs no batch, writes nothing and keeps the state.
    Returns the model's results."""
    history.check()
    expected_runs = []
    for number, (run, arrival) in enumerate(zip(history.runs, arrivals, strict=True), start=1):
        before_run(number)
        expected = model.run([all_lines(arrival)])
        expected_runs.append(expected)
        assert run.report.status == "succeeded", f"run {number}: {run.report.error}"
        if history.validated:
            assert run.verdict in ("passed", "warned"), f"run {number}: validation {run.verdict}"
        assert_run_matches(run.report, expected)
        if model.state_rows is not None:
            assert run.report.state_rows == model.state_rows, f"run {number}"
        assert run.table == ordered(model.rows()), f"after arrival {number}"
        assert_ledger_matches(history, run.report, arrival)
    again = history.again
    if again is None:
        return expected_runs
    assert (again.report.status, again.report.batches, again.report.output_rows) == ("succeeded", 0, 0)
    assert again.report.state_rows == history.runs[-1].report.state_rows
    assert again.table == ordered(model.rows())
    return expected_runs


SECOND = timedelta(seconds=1)  # a report's times are to the second


def assert_ledger_matches(history: History, report: RunReport, arrival: dict[str, list[str]]) -> None:
    """The file ledger names exactly the arrival's files for the run that took them, each
    with its size on disk and its records (non-blank lines), and its counts add up to the
    run report's."""
    where = history.locations
    taken = taken_files(Ledger(where.ledger), CheckpointLog.of(where), run_id=report.run_id)
    landing = history.locations.landing
    assert sorted(f["path"] for f in taken) == sorted(join(landing, name) for name in arrival)
    for f in taken:
        lines = arrival[f["path"].removeprefix(landing + "/")]
        assert f["size_bytes"] == fs.size(f["path"])
        assert f["input_rows"] == sum(1 for line in lines if line.strip()), f["path"]
        committed = datetime.fromisoformat(f["committed_at"])
        assert (
            datetime.fromisoformat(report.started_at) <= committed <= datetime.fromisoformat(report.ended_at) + SECOND
        )
    assert sum(f["input_rows"] for f in taken) == report.input_rows
    assert sum(f["quarantined_rows"] for f in taken) == report.quarantined_rows
    if all(f["used_rows"] is not None for f in taken):
        assert sum(f["used_rows"] for f in taken) == report.used_rows
    else:  # Spark dropped rows it counts per batch only
        assert report.duplicates_dropped or history.pipeline.pattern == "join"
