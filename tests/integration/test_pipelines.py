"""Every shipped pipeline on its demo samples: several availableNow runs, then a restart in a
fresh process, then a run with nothing new, each compared with an independent model
(tests/model.py).

One module fixture runs all of them, arrival by arrival, on the worker's shared session;
the last arrival of every pipeline is run by one fresh process (tests/restart.py), so
one JVM start covers every restart. The tests then hold each pipeline's history against
its model, so a failure names the pipeline and the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from pyspark.errors import AnalysisException

from demo import samples
from jobs import declare
from jobs.columns import RESCUED_DATA
from jobs.flow.patterns import pattern_of
from jobs.lake import fs
from jobs.lake.layout import Locations, join
from jobs.run.ledger import Ledger, with_recorded_schema
from jobs.run.report import RunReport, load_reports
from jobs.run.runner import RunFailed, RunRefused
from jobs.validate.validation import validate_run
from tests.helpers import REPO, all_lines, assert_run_matches, land, run_pipeline
from tests.model import (
    AdJoinModel,
    ClickstreamUniqueModel,
    DeviceStepsModel,
    EventsModel,
    RackAlertsModel,
    RackTemperaturesModel,
    SpendingSessionsModel,
    enriched_row,
    inferred_fields,
    inferred_row,
)

pytestmark = pytest.mark.xdist_group("pipelines")  # one worker runs the shared fixture once


def _cell(value):
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC)
    if isinstance(value, float):
        return round(value, 6)
    return value


def ordered(rows: list[tuple]) -> list[tuple]:
    """Rows in one order whatever their values (None, dicts): the tables' and the models'."""
    return sorted(rows, key=repr)


def table(spark, pipeline: declare.PipelineBase, locations: Locations) -> list[tuple]:
    """The committed table (read through the sink log by Spark itself), in UTC, rescued
    data as a dict, ordered()."""
    columns = pattern_of(with_recorded_schema(pipeline, Ledger(locations.ledger))).output_columns()
    try:
        rows = spark.read.parquet(locations.output).select(*columns).collect()
    except AnalysisException:  # no committed file yet: nothing to infer a schema from
        return []
    rows = [tuple(_cell(value) for value in row) for row in rows]
    if RESCUED_DATA in columns:
        rows = [(*row[:-1], json.loads(row[-1]) if row[-1] else None) for row in rows]
    return ordered(rows)


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
    error: BaseException | None = None

    def check(self) -> None:
        if self.error is not None:
            raise self.error


SHARED = [  # the pipelines of the shared fixture (clickstream itself has tests/integration/test_streaming.py)
    "ad_clicks",
    "ad_impressions",
    "clickstream_enriched",
    "clickstream_inferred",
    "clickstream_unique",
    "device_steps",
    "rack_alerts",
    "rack_temperatures",
    "spending_sessions",
]


@pytest.fixture(scope="module")
def histories(spark, tmp_path_factory) -> dict[str, History]:
    """Every pipeline of SHARED through its sample arrivals on one root: in this process,
    then the last arrival of all of them by one fresh process, then nothing new again."""
    root = str(tmp_path_factory.mktemp("pipelines") / "root")
    found = {name: History(declare.load(name), Locations.resolve(name, root=root)) for name in SHARED}

    def in_process(history: History) -> Run:
        report = run_pipeline(spark, history.pipeline, history.locations, [])
        verdict = validate_run(spark, history.pipeline, history.locations, report, echo=lambda line: None).status
        return Run(report, verdict, table(spark, history.pipeline, history.locations))

    for history in found.values():
        arrivals = samples.arrivals(history.pipeline.name)
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
        results = {r.validation_id: r for r in _results(history.locations)}
        report = load_reports(history.locations.runs)[-1]
        verdict = results[report.run_id].status if report.run_id in results else None
        history.runs.append(Run(report, verdict, table(spark, history.pipeline, history.locations)))
        try:
            history.again = in_process(history)
        except Exception as error:  # noqa: BLE001 - the pipeline's own test reports it
            history.error = error
    return found


def _results(locations: Locations):
    from jobs.validate.result import load_results

    return load_results(locations.runs)


def assert_history_matches(history: History, model, arrivals, before_run=lambda number: None) -> list:
    """Each run's accounting, state rows, verdict and table equal the model's; then a run with
    nothing new runs no batch, writes nothing and keeps the state. Returns the model's results."""
    history.check()
    expected_runs = []
    for number, (run, arrival) in enumerate(zip(history.runs, arrivals, strict=True), start=1):
        before_run(number)
        expected = model.run([all_lines(arrival)])
        expected_runs.append(expected)
        assert run.report.status == "succeeded", f"run {number}: {run.report.error}"
        assert run.verdict in ("passed", "warned"), f"run {number}: validation {run.verdict}"
        assert_run_matches(run.report, expected)
        if model.state_rows is not None:
            assert run.report.state_rows == model.state_rows, f"run {number}"
        assert run.table == ordered(model.rows()), f"after arrival {number}"
    again = history.again
    assert (again.report.status, again.report.batches, again.report.output_rows) == ("succeeded", 0, 0)
    assert again.report.state_rows == history.runs[-1].report.state_rows
    assert again.table == ordered(model.rows())
    return expected_runs


WINDOW_MODELS = {
    "rack_temperatures": RackTemperaturesModel,
    "device_steps": DeviceStepsModel,
    "clickstream_unique": ClickstreamUniqueModel,
}


@pytest.mark.parametrize("name", sorted(WINDOW_MODELS))
def test_window_pipeline_matches_the_model_over_runs_and_a_restart(histories, name):
    history = histories[name]
    model = WINDOW_MODELS[name]()
    expected = assert_history_matches(history, model, samples.arrivals(name))

    # The samples hold late and unusable records (and repeats, to deduplicate), or they prove little.
    assert sum(e.late_rows_dropped for e in expected) > 0
    assert sum(e.quarantined_rows for e in expected) > 0
    duplicates = sum(e.duplicates_dropped for e in expected)
    assert duplicates > 0 if history.pipeline.deduplicate else duplicates == 0
    assert len(model.rows()) >= 5


def test_enriched_events_follow_the_dimension_as_it_is_at_each_run(spark, histories):
    history = histories["clickstream_enriched"]
    arrivals = samples.arrivals("clickstream_enriched")
    users: dict[str, tuple[str, str]] = {}
    model = EventsModel(lambda line: enriched_row(line, users))

    assert_history_matches(history, model, arrivals, lambda number: users.update(USERS if number < 3 else USERS_LATER))

    quarantined = spark.read.json(history.locations.quarantine).where("reason = 'no_match_in_users'").count()
    assert quarantined == sum(1 for arrival in arrivals[:2] for line in all_lines(arrival) if '"user4"' in line) > 0
    assert {row[-1] for row in model.rows() if row[2] == "user3"} == {"team", "pro"}


def test_inferred_schema_is_recorded_and_new_fields_are_rescued(histories):
    history = histories["clickstream_inferred"]
    arrivals = samples.arrivals("clickstream_inferred")
    fields = inferred_fields(all_lines(arrivals[0]))
    model = EventsModel(lambda line: inferred_row(line, fields, "rescue"))

    assert_history_matches(history, model, arrivals)

    resolved = with_recorded_schema(history.pipeline, Ledger(history.locations.ledger))
    assert list(resolved.source.fields) == fields  # recorded by the first run, kept since
    assert sum(1 for row in model.rows() if row[-1]) == 6  # the six events with new fields


@pytest.mark.parametrize(
    ("name", "model_class"), [("rack_alerts", RackAlertsModel), ("spending_sessions", SpendingSessionsModel)]
)
def test_stateful_processor_matches_the_model_over_runs_and_a_restart(histories, name, model_class):
    history = histories[name]
    model = model_class()
    expected = assert_history_matches(history, model, samples.arrivals(name))

    assert len(model.rows()) >= 2 and sum(e.quarantined_rows for e in expected) > 0
    if history.pipeline.process.definition.event_time_timeout:
        assert sum(e.late_rows_dropped for e in expected) > 0
        assert model.state_rows > 0  # sessions still open wait in state


@pytest.mark.parametrize(("name", "outer"), [("ad_clicks", False), ("ad_impressions", True)])
def test_stream_stream_join_matches_the_model_over_runs_and_a_restart(histories, name, outer):
    model = AdJoinModel(outer=outer)
    expected = assert_history_matches(histories[name], model, samples.arrivals(name))

    assert sum(e.late_rows_dropped for e in expected) == 2  # one of each side
    matched = [row for row in model.rows() if row[3] is not None]
    assert len(matched) >= 5
    if outer:
        assert len(model.rows()) > len(matched)  # impressions no click matched, with nulls


def test_enrichment_keeps_unmatched_events_with_nulls_when_declared(spark, tmp_path, quiet):
    """Also a Parquet dimension, at a full path outside <root>/dimensions/."""
    dimension = tmp_path / "elsewhere" / "users.parquet"
    spark.createDataFrame([("user1", "DE", "pro")], "user_id string, country string, plan string").write.parquet(
        str(dimension)
    )
    declared = declare.load("clickstream_enriched")
    enrichment = declared.enrich.model_copy(update={"unmatched": "keep", "format": "parquet", "path": str(dimension)})
    spec = declared.model_copy(update={"enrich": enrichment})
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    arrival = samples.arrivals(spec.name)[0]
    land(locations.landing, arrival)

    report = run_pipeline(spark, spec, locations, quiet)

    model = EventsModel(lambda line: enriched_row(line, {"user1": ("DE", "pro")}, unmatched="keep"))
    assert_run_matches(report, model.run([all_lines(arrival)]))
    assert table(spark, spec, locations) == ordered(model.rows())


def test_enrichment_refuses_a_missing_or_ambiguous_dimension(spark, tmp_path, quiet):
    spec = declare.load("clickstream_enriched")
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    land(locations.landing, samples.arrivals(spec.name)[0])
    with pytest.raises(RunRefused, match="dimension table users not found"):
        run_pipeline(spark, spec, locations, quiet)
    fs.write_text(join(locations.dimensions, "users.csv"), "user_id,country,plan\nu1,DE,pro\nu1,FR,free\n")
    with pytest.raises(RunRefused, match="more than one row for user_id 'u1'"):
        run_pipeline(spark, spec, locations, quiet)
    assert not fs.exists(locations.output)


def test_new_fields_fail_the_run_and_lose_nothing_until_the_declaration_says_ignore(spark, tmp_path, quiet):
    declared = declare.load("clickstream_inferred")
    spec = declared.model_copy(update={"source": declared.source.model_copy(update={"new_fields": "fail"})})
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    arrivals = samples.arrivals(spec.name)
    fields = inferred_fields(all_lines(arrivals[0]))
    land(locations.landing, arrivals[0])
    run_pipeline(spark, spec, locations, quiet)
    land(locations.landing, arrivals[2])

    with pytest.raises(RunFailed, match=r"new field\(s\) campaign, device in .*arrival-3-a.json"):
        run_pipeline(spark, spec, locations, quiet)

    ignoring = spec.model_copy(update={"source": spec.source.model_copy(update={"new_fields": "ignore"})})
    report = run_pipeline(spark, ignoring, locations, quiet)
    model = EventsModel(lambda line: inferred_row(line, fields, "ignore"))
    model.run([all_lines(arrivals[0])])
    assert_run_matches(report, model.run([all_lines(arrivals[2])]))
    assert table(spark, ignoring, locations) == ordered(model.rows())
