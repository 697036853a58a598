"""The window and event pipelines on their demo samples: several availableNow runs, a
restart in a fresh process, then a run with nothing new, each compared with an
independent model (tests/model.py); plus the enrichment and inference cases of their own."""

from __future__ import annotations

import pytest

from demo import samples
from jobs import declare
from jobs.accounting.ledger import Ledger, with_recorded_schema
from jobs.lake import fs
from jobs.lake.layout import Locations, join
from jobs.run.runner import RunFailed, RunRefused
from tests.helpers import all_lines, assert_run_matches, land, run_pipeline
from tests.histories import USERS, USERS_LATER, assert_history_matches, ordered, run_histories, table
from tests.model import (
    ClickstreamUniqueModel,
    DeviceStepsModel,
    EventsModel,
    GithubActivityModel,
    RackTemperaturesModel,
    RuleBook,
    enriched_row,
    inferred_fields,
    inferred_row,
)

NAMES = [
    "clickstream_enriched",
    "clickstream_inferred",
    "clickstream_unique",
    "device_steps",
    "github_activity",
    "rack_temperatures",
]


@pytest.fixture(scope="module")
def histories(spark, tmp_path_factory):
    return run_histories(spark, str(tmp_path_factory.mktemp("pipelines") / "root"), NAMES)


WINDOW_MODELS = {
    "rack_temperatures": RackTemperaturesModel,
    "device_steps": DeviceStepsModel,
    "clickstream_unique": ClickstreamUniqueModel,
    "github_activity": GithubActivityModel,
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
    model = EventsModel(lambda line: enriched_row(line, users), RuleBook.of("clickstream_enriched"))

    assert_history_matches(history, model, arrivals, lambda number: users.update(USERS if number < 3 else USERS_LATER))

    quarantined = spark.read.json(history.locations.quarantine).where("reason = 'no_match_in_users'").count()
    # Users the dimension lacks when they land: user4 until arrival 3, a load test's user always.
    lacking = [(arrival, '"user4"') for arrival in arrivals[:2]] + [(arrival, '"loadtest-') for arrival in arrivals]
    assert quarantined == sum(1 for arrival, user in lacking for line in all_lines(arrival) if user in line) > 1
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


def test_enrichment_keeps_unmatched_events_with_nulls_when_declared(spark, tmp_path):
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

    report = run_pipeline(spark, spec, locations)

    model = EventsModel(
        lambda line: enriched_row(line, {"user1": ("DE", "pro")}, unmatched="keep"), RuleBook.of("clickstream_enriched")
    )
    assert_run_matches(report, model.run([all_lines(arrival)]))
    assert table(spark, spec, locations) == ordered(model.rows())


def test_enrichment_refuses_a_missing_or_ambiguous_dimension(spark, tmp_path):
    spec = declare.load("clickstream_enriched")
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    land(locations.landing, samples.arrivals(spec.name)[0])
    with pytest.raises(RunRefused, match="dimension table users not found"):
        run_pipeline(spark, spec, locations)
    fs.write_text(join(locations.dimensions, "users.csv"), "user_id,country,plan\nu1,DE,pro\nu1,FR,free\n")
    with pytest.raises(RunRefused, match="more than one row for user_id 'u1'"):
        run_pipeline(spark, spec, locations)
    assert not fs.exists(locations.output)


def test_new_fields_fail_the_run_and_lose_nothing_until_the_declaration_says_ignore(spark, tmp_path):
    declared = declare.load("clickstream_inferred")
    spec = declared.model_copy(update={"source": declared.source.model_copy(update={"new_fields": "fail"})})
    locations = Locations.resolve(spec.name, root=str(tmp_path / "root"))
    arrivals = samples.arrivals(spec.name)
    fields = inferred_fields(all_lines(arrivals[0]))
    land(locations.landing, arrivals[0])
    run_pipeline(spark, spec, locations)
    land(locations.landing, arrivals[2])

    with pytest.raises(RunFailed, match=r"new field\(s\) campaign, device in .*arrival-3-a.json"):
        run_pipeline(spark, spec, locations)

    ignoring = spec.model_copy(update={"source": spec.source.model_copy(update={"new_fields": "ignore"})})
    report = run_pipeline(spark, ignoring, locations)
    model = EventsModel(lambda line: inferred_row(line, fields, "ignore"))
    model.run([all_lines(arrivals[0])])
    assert_run_matches(report, model.run([all_lines(arrivals[2])]))
    assert table(spark, ignoring, locations) == ordered(model.rows())
