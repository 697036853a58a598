"""Messages whole: a refusal's advice is never cut; the console's line is its first sentence
and the commands that help, with where the whole message is."""

from __future__ import annotations

import pytest

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import IncompatibleCheckpoint, Ledger, check_contract
from jobs.lake.layout import Locations
from jobs.run.failure import one_line
from jobs.run.messages import BRIEF_CHARS, brief


def test_a_long_refusal_is_whole_in_the_report_and_brief_on_the_console(tmp_path):
    root = tmp_path / ("a-deep-folder-" * 8) / "root"  # long paths: the advice is past 500 characters
    locations = Locations.resolve("clickstream", root=str(root))
    ledger = Ledger(locations.ledger)
    ledger.record_contract({"window_duration_s": 60, "landing": locations.landing})
    with pytest.raises(IncompatibleCheckpoint) as refused:
        check_contract(
            "clickstream",
            {"window_duration_s": 120, "landing": locations.landing},
            ledger,
            CheckpointLog.of(locations),
            locations.quarantine,
        )

    whole = one_line(refused.value)
    assert len(whole) > 500 and whole.endswith("the next run then reprocesses every landed file.")
    assert f"move aside {locations.checkpoint}, {locations.output} and {locations.quarantine}" in whole

    line = brief(whole, "runs/clickstream/R.json")
    assert line == (
        f"pipeline 'clickstream' changed since checkpoint {locations.checkpoint} was started, in ways Spark cannot "
        "resume from: window_duration_s: 60 -> 120. Commands that help: python -m jobs rebuild clickstream; "
        "python -m jobs plan clickstream. The whole message: runs/clickstream/R.json"
    )


def test_a_short_message_is_the_console_line_as_it_is():
    message = "landing location /x does not exist; land files there first (python -m jobs land FILE... --to /x)"
    assert len(message) <= BRIEF_CHARS and brief(message, "R") == message


def test_a_command_in_a_clause_is_kept_whole_up_to_its_clause_s_end():
    message = (
        "batch 3 failed on its data, reading /l/a.json (line unknown): CAST_INVALID_INPUT: The value 'x' cannot "
        "be cast to BIGINT. " + "Spark's advice. " * 10 + "Every rerun redoes it, so to get past it quarantine "
        "the file: python -m jobs quarantine-file clickstream /l/a.json --reason '...' (Airflow: the DAG's "
        "quarantine_file param), then run again"
    )
    assert brief(message, None) == (
        "batch 3 failed on its data, reading /l/a.json (line unknown): CAST_INVALID_INPUT: The value 'x' cannot "
        "be cast to BIGINT. Commands that help: python -m jobs quarantine-file clickstream /l/a.json --reason '...'."
    )
