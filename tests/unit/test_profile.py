"""`python -m jobs profile` without Spark: a sample's fields become a declaration and a suite
that load as written, whatever the producers named their fields and whatever values they
sent (generated); what cannot be declared is left out and said; the likely event time is
found; nothing is written over a file, or into the package's own folders.
(The proposed pipeline run on real data, its suite passing: tests/e2e/test_profile.py.)"""

from __future__ import annotations

import gzip
import json
import os

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.cli import main
from jobs.declare.load import from_mapping
from jobs.declare.profile import Field, Sample, read_sample, spread
from jobs.declare.propose import propose, written
from jobs.units import UsageError
from jobs.validate.suite import parse_suite


def _sample(events: list[dict], unusable: int = 0) -> Sample:
    sample = Sample("landing", ["f.json"], 1, Field(), lines=len(events) + unusable, unusable=unusable)
    for event in events:
        sample.events.observe(event)
    return sample


def _loads(proposal) -> None:
    """Both as written (YAML), read back and loaded as the product loads them."""
    declaration, suite = (yaml.safe_load(text) for text in written(proposal))
    assert declaration == proposal.declaration and suite == proposal.suite
    parse_suite(suite, from_mapping(declaration, "proposed"), "proposed")


EXAMPLES = int(os.environ.get("JOBS_HYPOTHESIS_EXAMPLES", "150"))  # as tests/unit/test_poison_properties.py
names = st.text(min_size=1, max_size=12)
scalars = st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.floats(allow_nan=False) | st.text(max_size=20)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.dictionaries(names.filter(lambda n: n.lower() != "ts"), values, max_size=6), min_size=1, max_size=12)
)
def test_whatever_fields_and_values_landed_the_proposal_loads_as_written(events):
    stamped = [{**event, "ts": f"2026-11-{1 + i % 28:02d}T10:00:00Z"} for i, event in enumerate(events)]
    proposal = propose("team_events", _sample(stamped))
    _loads(proposal)
    assert proposal.event_time == ("ts", "iso8601")
    for name in proposal.declaration["source"]["schema"]:
        assert name.isascii() and (name[0].isalpha() or name[0] == "_")


def test_what_cannot_be_declared_is_left_out_and_said():
    event = {
        "when": "2026-11-29 10:00:00",
        "ok": 1,
        "a b": 1,  # not a column name
        "event_time": "x",  # a column the product adds
        "_jobs_x": 1,
        "OK": 2,  # the same as 'ok' but for case
        "nested": {"a.b": 1, "fine-name": "x", "@type": "y"},
        "empty": {},
        "mixed": 1,
    }
    other = {**event, "mixed": "one", "when": "2026-11-29T11:00:00+02:00"}
    proposal = propose("team_events", _sample([event, other, {**event}]))
    _loads(proposal)
    schema = proposal.declaration["source"]["schema"]
    assert list(schema) == ["when", "ok", "nested", "mixed"]
    assert schema["nested"] == {"fine-name": "string", "@type": "string"} and schema["mixed"] == "long"
    said = "\n".join(proposal.notes)
    for name in ("a b", "event_time", "_jobs_x", "OK", "nested.a.b", "empty"):
        assert f"field {name!r} left out" in said
    assert "field 'mixed': 1 of 3 values are not long: their events are quarantined" in said
    assert proposal.event_time == ("when", "iso8601")  # 'yyyy-MM-dd HH:mm:ss' and offsets: Spark's ISO reading


def test_the_event_time_is_a_time_in_every_event_a_time_like_name_first():
    events = [
        {"id": 1_700_000_000 + i, "ts": 1_700_000_000_000 + i, "meta": {"sent": "2026-11-29T10:00:00Z"}}
        for i in range(5)
    ]
    # 'id' holds epoch-like numbers but is no time's name; 'ts' is, in milliseconds.
    assert propose("p", _sample(events)).event_time == ("ts", "epoch_millis")
    without = [{k: v for k, v in e.items() if k != "ts"} for e in events]
    assert propose("p", _sample(without)).event_time == ("meta.sent", "iso8601")  # a path inside an object
    once_unread = [{**without[i % 5]} for i in range(19)] + [{"id": 1, "meta": {"sent": "29/11/2026 10:00"}}]
    proposal = propose("p", _sample(once_unread))  # 19 of 20 read as a time: a run quarantines the other
    assert proposal.event_time == ("meta.sent", "iso8601")
    assert "1 of 20 events have no meta.sent that reads as iso8601: a run quarantines them" in proposal.notes
    assert proposal.suite["run_checks"]["quarantine_share"]["max"] == 0.07
    with pytest.raises(UsageError, match="no field holds a time in 95% of the sampled events"):
        propose("p", _sample(once_unread[15:]))
    with pytest.raises(UsageError, match="no event in the 1 file"):
        propose("p", _sample([], unusable=3))


def test_the_suite_holds_what_the_sample_showed():
    events = [
        {
            "at": f"2026-11-29T10:{i % 60:02d}:00Z",
            "event_id": f"e{i}",
            "kind": ["view", "click", "buy"][i % 3],
            "amount": float(i),
            "coupon": "c" if i % 2 else None,
            "note": "\n- yes: 'no' # null" if i % 3 == 0 else 'a "quoted" value',
        }
        for i in range(30)
    ]
    proposal = propose("shop", _sample(events, unusable=1))
    _loads(proposal)
    checks = {(e["expect"], e.get("column")): e for e in proposal.suite["expectations"]}
    assert checks[("column_values_to_not_be_null", "event_time")]["severity"] == "fail"
    assert checks[("column_values_to_not_be_null", "at")]["severity"] == "fail"  # the event time's field
    assert checks[("column_values_to_be_unique", "event_id")]["severity"] == "warn"
    assert checks[("column_values_to_be_in_set", "kind")]["value_set"] == ["buy", "click", "view"]
    assert checks[("column_values_to_be_in_set", "note")]["value_set"] == ["\n- yes: 'no' # null", 'a "quoted" value']
    between = checks[("column_values_to_be_between", "amount")]
    assert (between["min_value"], between["max_value"]) == (0.0, 29.0)
    assert checks[("column_values_to_not_be_null", "coupon")]["mostly"] == 0.4  # half the time, less a fifth
    assert proposal.declaration["source"]["required"] == ["event_id", "kind", "amount", "note"]
    assert proposal.suite["run_checks"]["quarantine_share"]["max"] == 0.06  # 1 in 31 lines, and 2 points more
    assert "1 of 31 line(s) are not a JSON object" in proposal.notes[-1]


def test_a_sample_is_read_as_a_run_lists_a_landing(tmp_path):
    landing = tmp_path / "landing"
    (landing / "dt=2026-11-29").mkdir(parents=True)
    lines = [json.dumps({"ts": f"2026-11-29T10:00:{i:02d}Z", "n": i}) for i in range(10)]
    (landing / "a.json").write_text("\n".join(lines[:5]) + "\n\n")
    with gzip.open(landing / "dt=2026-11-29" / "b.json.gz", "wt") as out:
        out.write("\n".join(lines[5:]) + "\n{not json")
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps({"ts": "2026-11-29T10:00:00Z", "secret": 1}) + "\n")
    os.symlink(outside, landing / "link.json")  # never followed
    sample = read_sample(str(landing), 20, 1000)
    assert (sample.count, sample.unusable, sample.files_listed) == (10, 1, 2)
    assert "secret" not in sample.events.children
    assert read_sample(str(landing), 20, 3).lines == 3
    assert spread(list("abcdefghij"), 3) == ["a", "e", "j"] and spread(["a"], 3) == ["a"]


def test_profile_writes_only_into_the_teams_own_folders_and_never_over_a_file(tmp_path, monkeypatch, capsys):
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "e.json").write_text(json.dumps({"ts": "2026-11-29T10:00:00Z", "user": "u"}) + "\n")
    for variable in ("JOBS_PIPELINES_DIR", "JOBS_EXPECTATIONS_DIR"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["profile", str(landing), "--name", "team_events"]) == 2
    assert "set JOBS_PIPELINES_DIR and JOBS_EXPECTATIONS_DIR" in capsys.readouterr().err
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(tmp_path / "pipelines"))
    monkeypatch.setenv("JOBS_EXPECTATIONS_DIR", str(tmp_path / "expectations"))
    assert main(["profile", str(landing), "--name", "Team Events"]) == 2
    assert main(["profile", str(landing), "--name", "team_events"]) == 0
    out = capsys.readouterr().out
    assert "wrote " + str(tmp_path / "pipelines" / "team_events.yaml") in out and "event time: ts (iso8601)" in out
    first = (tmp_path / "pipelines" / "team_events.yaml").read_text()
    assert first.startswith("# PROPOSED by `python -m jobs profile`")
    assert main(["profile", str(landing), "--name", "team_events"]) == 2  # never over a file
    assert "profile never writes over a file" in capsys.readouterr().err
    assert (tmp_path / "pipelines" / "team_events.yaml").read_text() == first
