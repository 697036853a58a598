"""Which days of a dated landing a run lists (jobs/run/pending.py open_days): from the newest
day taken or the lateness before today, whichever is earlier, every name that is not a day,
the whole landing when nothing is recorded or a whole listing is due."""

from __future__ import annotations

from datetime import UTC, datetime

from jobs.declare.parts import Listing
from jobs.run.pending import _late, newest_day, open_days

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
LISTING = Listing(lateness="2 days", whole_every="1 day")


def _landing(tmp_path, names):
    for name in names:
        (tmp_path / name).mkdir() if not name.endswith(".json") else (tmp_path / name).write_text("{}\n")
    return str(tmp_path)


def test_the_days_from_the_newest_taken_or_the_lateness_and_every_other_name(tmp_path):
    days = [f"dt=2026-11-{d:02d}" for d in range(20, 31)] + ["dt=2026-12-01"]
    landing = _landing(tmp_path, [*days, "other", "flat.json", "dt=2026-13-01"])
    recent = {"newest_day": "2026-12-01", "whole_at_ms": NOW_MS - 3600_000}
    chosen, passed = open_days(landing, LISTING, recent, NOW_MS)
    # Two days of lateness before today; the names that are no day (a month 13 is none) always.
    assert sorted(chosen) == ["dt=2026-11-29", "dt=2026-11-30", "dt=2026-12-01", "dt=2026-13-01", "flat.json", "other"]
    assert passed == frozenset(days[:-3])
    behind = {"newest_day": "2026-11-25", "whole_at_ms": NOW_MS - 3600_000}  # a source that fell behind
    chosen, _ = open_days(landing, LISTING, behind, NOW_MS)
    assert min(c for c in chosen if c.startswith("dt=2026-11")) == "dt=2026-11-25"


def test_the_whole_landing_when_nothing_is_recorded_or_a_whole_listing_is_due(tmp_path):
    landing = _landing(tmp_path, ["dt=2026-11-01", "dt=2026-12-01"])
    assert open_days(landing, LISTING, None, NOW_MS) is None
    due = {"newest_day": "2026-12-01", "whole_at_ms": NOW_MS - 25 * 3600_000}
    assert open_days(landing, LISTING, due, NOW_MS) is None
    every_day_open = {"newest_day": "2026-11-01", "whole_at_ms": NOW_MS}
    assert open_days(landing, LISTING, every_day_open, NOW_MS) is None  # nothing to leave out


def test_a_new_file_in_a_day_past_its_lateness_is_late_and_the_newest_day_taken_is_kept(tmp_path):
    landing = str(tmp_path)
    state = {"newest_day": "2026-12-01", "whole_at_ms": 0}
    new = [f"{landing}/dt=2026-11-02/x.json", f"{landing}/dt=2026-11-30/y.json", f"{landing}/flat.json"]
    assert _late(landing, new, LISTING, state, NOW_MS) == [new[0]]
    assert _late(landing, new, LISTING, None, NOW_MS) == []  # a first listing finds nothing late
    taken = {f"{landing}/dt=2026-11-30/y.json": 1, f"{landing}/flat.json": 1, f"{landing}/dt=x/z.json": 1}
    assert newest_day(landing, taken, "2026-11-02") == "2026-11-30"
    assert newest_day(landing, {}, "2026-11-02") == "2026-11-02"


def test_the_docs_example_of_listing_loads_and_leaves_the_checkpoint_contract_alone():
    """`source: listing` as docs/layout.md writes it loads as documented; misspelt, it is refused
    with the name meant; it changes what a run lists, not what the state or the table holds, so
    it is not in the checkpoint's contract (a change resumes)."""
    import re

    import pytest
    import yaml

    from jobs.declare.load import DeclarationError, from_mapping, pipelines_dir
    from jobs.flow.patterns import pattern_of
    from tests.unit.test_freshness import _docs_example

    shipped = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    example = _docs_example("layout.md", "Dated folders")["source"]
    pipeline = from_mapping({**shipped, "source": {**shipped["source"], **example}})
    (source,) = pipeline.sources
    assert (source.listing.lateness_s, source.listing.whole_every_s) == (2 * 24 * 3600, 24 * 3600)
    assert pattern_of(pipeline).contract() == pattern_of(from_mapping(shipped)).contract()
    misspelt = {
        "listng": (example["listing"], "did you mean 'listing'?"),
        "listing": ({"latenes": "2 days"}, "did you mean 'lateness'?"),
    }
    for key, (value, said) in misspelt.items():
        with pytest.raises(DeclarationError, match=re.escape(said)):
            from_mapping({**shipped, "source": {**shipped["source"], key: value}})
