"""A dated landing is listed from its newest day taken (and the days within the listing's
lateness of today), never whole at every run; a file landed late in a day already passed is
found by the next whole listing, read then and named."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.accounting.ledger import Ledger
from jobs.declare.parts import Listing
from tests.helpers import event, land, run_pipeline


def test_old_days_are_listed_only_by_the_whole_listing_which_names_what_landed_late(spark, clickstream, locations):
    listing = Listing(lateness="1 day", whole_every="1 day")
    dated = clickstream.model_copy(update={"source": clickstream.source.model_copy(update={"listing": listing})})
    land(locations.landing, {"dt=2023-07-29/a.json": [event("u1", "2023-07-29T23:59:00Z")]})
    land(locations.landing, {"dt=2023-07-30/b.json": [event("u2", "2023-07-30T10:00:00Z")]})
    first = run_pipeline(spark, dated, locations)  # nothing recorded yet: the whole landing
    assert first.input_files == 2 and first.found_late == []
    state = Ledger(locations.ledger).listing_state()
    assert state["0"]["newest_day"] == "2023-07-30" and state["0"]["whole_at_ms"] > 0

    land(locations.landing, {"dt=2023-07-29/late.json": [event("u3", "2023-07-29T23:59:30Z")]})
    land(locations.landing, {"dt=2023-07-30/c.json": [event("u4", "2023-07-30T10:01:00Z")]})
    land(locations.landing, {"flat.json": [event("u5", "2023-07-30T10:02:00Z")]})  # not a day: always listed
    second = run_pipeline(spark, dated, locations)
    assert second.input_files == 2  # c.json and flat.json: dt=2023-07-29 was not listed
    assert second.found_late == [] and not second.skipped_files

    ledger = Path(locations.ledger) / "listing.json"  # a day later: the whole listing is due
    recorded = json.loads(ledger.read_text())
    recorded["sources"]["0"]["whole_at_ms"] = 0
    ledger.write_text(json.dumps(recorded))
    third = run_pipeline(spark, dated, locations)
    assert third.input_files == 1 and [Path(p).name for p in third.found_late] == ["late.json"]
    assert any(w.startswith("files_landed_late: 1 file(s)") and "late.json" in w for w in third.warnings)
    assert first.input_rows + second.input_rows + third.input_rows == 5  # each line once

    fourth = run_pipeline(spark, dated, locations)  # listed whole a moment ago: the open days only, nothing new
    assert fourth.input_files == 0 and fourth.found_late == []
