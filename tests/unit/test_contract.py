"""The checkpoint contract holds the declared types of what the state and the table keep:
a key's or an aggregated value's type changed is a change to rebuild for, a field nothing
keeps is not; a checkpoint recorded before types were part of it still matches."""

from __future__ import annotations

import yaml

from jobs import declare
from jobs.accounting.ledger import Ledger, contract_changes
from jobs.declare.load import pipelines_dir
from jobs.flow.patterns import pattern_of


def _clickstream(**schema: str) -> declare.PipelineBase:
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    raw["source"]["schema"].update(schema)
    return declare.from_mapping(raw)


def test_a_key_s_type_is_a_change_a_field_nothing_keeps_is_not():
    before = pattern_of(_clickstream()).contract()
    assert before["types"] == {"user_id": "string"}
    assert contract_changes(before, pattern_of(_clickstream(user_id="long")).contract()) == [
        "types: user_id string -> long"
    ]
    assert contract_changes(before, pattern_of(_clickstream(event_id="long")).contract()) == []


def test_an_aggregated_value_s_type_is_a_change():
    shipped = declare.load("rack_temperatures")
    raw = yaml.safe_load((pipelines_dir() / "rack_temperatures.yaml").read_text())
    raw["source"]["schema"]["temperature"] = "long"
    changes = contract_changes(pattern_of(shipped).contract(), pattern_of(declare.from_mapping(raw)).contract())
    assert "types: temperature double -> long" in changes


def test_a_checkpoint_recorded_before_types_matches_and_records_them_at_its_next_run(tmp_path):
    contract = pattern_of(_clickstream()).contract()
    older = {k: v for k, v in contract.items() if k != "types"}
    ledger = Ledger(str(tmp_path / "_pipeline"))
    ledger.record_contract(older)
    assert contract_changes(ledger.recorded_contract(), contract) == []
    ledger.record_contract(contract)  # the next run's
    assert ledger.recorded_contract() == contract
