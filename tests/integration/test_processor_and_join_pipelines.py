"""The stateful processor and stream-stream join pipelines on their demo samples: several
availableNow runs, a restart in a fresh process, then a run with nothing new, each
compared with an independent model (tests/model.py)."""

from __future__ import annotations

import pytest

from demo import samples
from tests.histories import assert_history_matches, run_histories
from tests.model import AdJoinModel, RackAlertsModel, SpendingSessionsModel

NAMES = ["ad_clicks", "ad_impressions", "rack_alerts", "spending_sessions"]


@pytest.fixture(scope="module")
def histories(spark, tmp_path_factory):
    return run_histories(spark, str(tmp_path_factory.mktemp("pipelines") / "root"), NAMES)


@pytest.mark.parametrize(
    ("name", "model_class"), [("rack_alerts", RackAlertsModel), ("spending_sessions", SpendingSessionsModel)]
)
def test_stateful_processor_matches_the_model_over_runs_and_a_restart(histories, name, model_class):
    history = histories[name]
    model = model_class()
    expected = assert_history_matches(history, model, samples.arrivals(name))

    assert len(model.rows()) >= 2 and sum(e.quarantined_rows for e in expected) > 0
    # A rule on a processor's input: the sample's broken record is quarantined before the processor sees it.
    assert sum(sum(e.violations.values()) for e in expected) == 1
    if history.pipeline.process.definition.event_time_timeout:
        assert sum(e.late_rows_dropped for e in expected) > 0
        assert model.state_rows > 0  # sessions still open wait in state


@pytest.mark.parametrize(("name", "outer"), [("ad_clicks", False), ("ad_impressions", True)])
def test_stream_stream_join_matches_the_model_over_runs_and_a_restart(histories, name, outer):
    model = AdJoinModel(outer=outer)
    expected = assert_history_matches(histories[name], model, samples.arrivals(name))

    assert sum(e.late_rows_dropped for e in expected) == 2  # one of each side
    assert sum(e.violations.get("known_ad", 0) for e in expected) == 1  # a rule on the join key: a click kept, counted
    matched = [row for row in model.rows() if row[3] is not None]
    assert len(matched) >= 5
    if outer:
        assert len(model.rows()) > len(matched)  # impressions no click matched, with nulls
