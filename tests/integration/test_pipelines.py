"""Every shipped pipeline on its demo samples: several availableNow runs, then a restart in a
fresh process, each compared with an independent model (tests/model.py)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from pyspark.errors import AnalysisException

from jobs import quality, runner, samples, storage
from jobs import spec as specs
from jobs.columns import RESCUED_DATA
from jobs.inference import with_recorded_schema
from jobs.report import load_reports
from jobs.runner import RunFailed
from jobs.storage import Locations
from tests.conftest import REPO, all_lines, assert_run_matches, land, python_cmd, run_pipeline
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

WINDOW_MODELS = {
    "rack_temperatures": RackTemperaturesModel,
    "device_steps": DeviceStepsModel,
    "clickstream_unique": ClickstreamUniqueModel,
}


def _cell(value):
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC)
    if isinstance(value, float):
        return round(value, 6)
    return value


def ordered(rows: list[tuple]) -> list[tuple]:
    """Rows in one order whatever their values (None, dicts): the tables' and the models'."""
    return sorted(rows, key=repr)


def table(spark, spec: specs.PipelineSpec, locations: Locations) -> list[tuple]:
    """The committed table (read through the sink log by Spark itself), in UTC, rescued
    data as a dict, ordered()."""
    columns = with_recorded_schema(spec, locations).output_columns
    try:
        rows = spark.read.parquet(locations.output).select(*columns).collect()
    except AnalysisException:  # no committed file yet: nothing to infer a schema from
        return []
    rows = [tuple(_cell(value) for value in row) for row in rows]
    if RESCUED_DATA in columns:
        rows = [(*row[:-1], json.loads(row[-1]) if row[-1] else None) for row in rows]
    return ordered(rows)


def restart_run(locations: Locations, name: str) -> dict:
    """A run in a fresh process (a new JVM): everything it knows comes from the checkpoint."""
    root = locations.landing.rsplit("/landing/", 1)[0]
    done = subprocess.run(python_cmd("run", name, "--root", root), cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return load_reports(locations)[-1]


@pytest.mark.parametrize("name", sorted(WINDOW_MODELS))
def test_window_pipeline_matches_the_model_over_runs_and_a_restart(spark, tmp_path, quiet, name):
    spec = specs.load(name)
    locations = Locations.resolve(name, root=str(tmp_path / "root"))
    model = WINDOW_MODELS[name]()

    runs = list(_runs(spark, spec, locations, quiet, model, samples.arrivals(name)))

    # The samples hold late and unusable records (and repeats, to deduplicate), or they prove little.
    assert sum(expected.late_rows_dropped for _, expected in runs) > 0
    assert sum(expected.quarantined_rows for _, expected in runs) > 0
    duplicates = sum(expected.duplicates_dropped for _, expected in runs)
    assert duplicates > 0 if spec.deduplicate else duplicates == 0
    assert len(model.rows()) >= 5


def _runs(spark, spec, locations, quiet, model, arrivals, before_run=lambda number: None):
    """Land each arrival and run: in process, then the last one as a restart. Yields each
    run's report beside the model's result, after checking the two agree."""
    for number, arrival in enumerate(arrivals, start=1):
        before_run(number)
        land(locations.landing, arrival)
        expected = model.run([all_lines(arrival)])
        if number < len(arrivals):
            report = run_pipeline(spark, spec, locations, quiet).to_dict()
            assert quality.validate_run(spark, spec, locations, report, echo=quiet.append).status != "failed"
        else:
            report = restart_run(locations, spec.name)
        assert report["status"] == "succeeded"
        assert_run_matches(report, expected)
        if model.state_rows is not None:
            assert report["state_rows"] == model.state_rows
        assert table(spark, spec, locations) == ordered(model.rows()), f"after arrival {number}"
        yield report, expected
    # Once more with nothing new: no batch, nothing written, the state as it was.
    again = run_pipeline(spark, spec, locations, quiet)
    assert (again.status, again.batches, again.output_rows) == ("succeeded", 0, 0)
    assert again.state_rows == report["state_rows"]
    assert table(spark, spec, locations) == ordered(model.rows())


def test_enriched_events_follow_the_dimension_as_it_is_at_each_run(spark, tmp_path, quiet):
    spec = specs.load("clickstream_enriched")
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    users = {"user1": ("DE", "pro"), "user2": ("FR", "free"), "user3": ("US", "team")}

    def write_users(number: int) -> None:
        if number == 3:  # between runs: user3 upgrades, user4 signs up
            users.update({"user3": ("US", "pro"), "user4": ("NL", "free")})
        text = "user_id,country,plan\n" + "".join(f"{u},{c},{p}\n" for u, (c, p) in users.items())
        storage.write_text(storage.join(locations.dimensions, "users.csv"), text)

    model = EventsModel(lambda line: enriched_row(line, users))
    list(_runs(spark, spec, locations, quiet, model, samples.arrivals(spec.name), write_users))
    quarantined = spark.read.json(locations.quarantine).where("reason = 'no_match_in_users'").count()
    assert (
        quarantined
        == sum(1 for arrival in samples.arrivals(spec.name)[:2] for line in all_lines(arrival) if '"user4"' in line)
        > 0
    )
    assert {row[-1] for row in model.rows() if row[2] == "user3"} == {"team", "pro"}


def test_enrichment_keeps_unmatched_events_with_nulls_when_declared(spark, tmp_path, quiet):
    """Also a Parquet dimension, at a full path outside <root>/dimensions/."""
    dimension = tmp_path / "elsewhere" / "users.parquet"
    spark.createDataFrame([("user1", "DE", "pro")], "user_id string, country string, plan string").write.parquet(
        str(dimension)
    )
    declared = specs.load("clickstream_enriched")
    enrichment = replace(declared.enrich, unmatched="keep", format="parquet", path=str(dimension))
    spec = replace(declared, enrich=enrichment)
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    arrival = samples.arrivals(spec.name)[0]
    land(locations.landing, arrival)

    report = run_pipeline(spark, spec, locations, quiet)

    model = EventsModel(lambda line: enriched_row(line, {"user1": ("DE", "pro")}, unmatched="keep"))
    assert_run_matches(report, model.run([all_lines(arrival)]))
    assert table(spark, spec, locations) == ordered(model.rows())


def test_enrichment_refuses_a_missing_or_ambiguous_dimension(spark, tmp_path, quiet):
    spec = specs.load("clickstream_enriched")
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    land(locations.landing, samples.arrivals(spec.name)[0])
    with pytest.raises(runner.RunRefused, match="dimension table users not found"):
        run_pipeline(spark, spec, locations, quiet)
    storage.write_text(storage.join(locations.dimensions, "users.csv"), "user_id,country,plan\nu1,DE,pro\nu1,FR,free\n")
    with pytest.raises(runner.RunRefused, match="more than one row for user_id 'u1'"):
        run_pipeline(spark, spec, locations, quiet)
    assert not storage.exists(locations.output)


def test_inferred_schema_is_recorded_and_new_fields_are_rescued(spark, tmp_path, quiet):
    spec = specs.load("clickstream_inferred")
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    arrivals = samples.arrivals(spec.name)
    fields = inferred_fields(all_lines(arrivals[0]))
    model = EventsModel(lambda line: inferred_row(line, fields, "rescue"))

    list(_runs(spark, spec, locations, quiet, model, arrivals))

    resolved = with_recorded_schema(spec, locations)
    assert list(resolved.source.schema) == fields  # recorded by the first run, kept since
    assert sum(1 for row in model.rows() if row[-1]) == 6  # the six events with new fields


def test_new_fields_fail_the_run_and_lose_nothing_until_the_declaration_says_ignore(spark, tmp_path, quiet):
    declared = specs.load("clickstream_inferred")
    spec = replace(declared, source=replace(declared.source, new_fields="fail"))
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    arrivals = samples.arrivals(spec.name)
    fields = inferred_fields(all_lines(arrivals[0]))
    land(locations.landing, arrivals[0])
    run_pipeline(spark, spec, locations, quiet)
    land(locations.landing, arrivals[2])

    with pytest.raises(RunFailed, match=r"new field\(s\) campaign, device in .*arrival-3-a.json"):
        run_pipeline(spark, spec, locations, quiet)

    ignoring = replace(spec, source=replace(spec.source, new_fields="ignore"))
    report = run_pipeline(spark, ignoring, locations, quiet)
    model = EventsModel(lambda line: inferred_row(line, fields, "ignore"))
    model.run([all_lines(arrivals[0])])
    assert_run_matches(report, model.run([all_lines(arrivals[2])]))
    assert table(spark, ignoring, locations) == ordered(model.rows())


@pytest.mark.parametrize(
    ("name", "model_class"), [("rack_alerts", RackAlertsModel), ("spending_sessions", SpendingSessionsModel)]
)
def test_stateful_processor_matches_the_model_over_runs_and_a_restart(spark, tmp_path, quiet, name, model_class):
    spec = specs.load(name)
    locations = Locations.resolve(name, root=str(tmp_path / "root"))
    model = model_class()

    runs = list(_runs(spark, spec, locations, quiet, model, samples.arrivals(name)))

    assert len(model.rows()) >= 2 and sum(expected.quarantined_rows for _, expected in runs) > 0
    if spec.drops_late_events:
        assert sum(expected.late_rows_dropped for _, expected in runs) > 0
        assert model.state_rows > 0  # sessions still open wait in state


@pytest.mark.parametrize(("name", "outer"), [("ad_clicks", False), ("ad_impressions", True)])
def test_stream_stream_join_matches_the_model_over_runs_and_a_restart(spark, tmp_path, quiet, name, outer):
    spec = specs.load(name)
    locations = Locations.resolve(name, root=str(tmp_path / "root"))
    model = AdJoinModel(outer=outer)

    runs = list(_runs(spark, spec, locations, quiet, model, samples.arrivals(name)))

    assert sum(expected.late_rows_dropped for _, expected in runs) == 2  # one of each side
    matched = [row for row in model.rows() if row[3] is not None]
    assert len(matched) >= 5
    if outer:
        assert len(model.rows()) > len(matched)  # impressions no click matched, with nulls
