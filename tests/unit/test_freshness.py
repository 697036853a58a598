"""Freshness without Spark: a table is late once no run appended rows for longer than its
`freshness` (declared, else twice its schedule), read from the event logs by `history --late`
as the report reads it from the run reports."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from jobs.cli import main
from jobs.history import freshness, log
from jobs.lake.layout import Locations
from tests.helpers import declaration_copy, finished_run


def test_history_late_lists_the_tables_no_run_appended_to_within_their_freshness(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "pipelines"
    declaration_copy(folder, "clickstream", freshness="3 hours")  # declared
    declaration_copy(folder, "device_steps")  # @hourly: twice that
    declaration_copy(folder, "ad_clicks", schedule=None)  # by hand: none
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder))
    now = datetime.now(UTC).replace(microsecond=0)
    root = tmp_path / "a root's * ?"  # SQL's and a glob's characters in its path (delta-rs refuses a '[')
    histories = {
        # appended 5 h ago; the runs since appended nothing: late, whatever its last run
        "clickstream": [
            finished_run(now, "clickstream", 0, 5, 40),
            finished_run(now, "clickstream", 1, 1, 0),
            finished_run(now, "clickstream", 2, 0.2, 0),
        ],
        "device_steps": [finished_run(now, "device_steps", 0, 1.5, 7)],  # within 2 h
        "ad_clicks": [finished_run(now, "ad_clicks", 0, 240, 9)],  # ten days, but no freshness
    }
    for name, runs in histories.items():
        for run in runs:
            log.record_run(run, Locations.resolve(name, root=str(root)), None)

    assert main(["history", "--late", "--root", str(root), "--json"]) == 0
    (late,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    appended = datetime.fromisoformat(histories["clickstream"][0].ended_at)
    assert late["pipeline"] == "clickstream" and datetime.fromisoformat(late["last_append"]) == appended
    assert late["freshness_s"] == 3 * 3600 and late["declared"] is True
    assert late["age_s"] == (datetime.fromisoformat(late["checked_at"]) - appended).total_seconds()

    assert main(["history", "--late", "--root", str(root)]) == 0
    said = capsys.readouterr().out
    assert "clickstream" in said and "5.0 h ago" in said and "1 late table(s) of 2 with a freshness" in said
    assert main(["history", "--late", "device_steps", "--root", str(root)]) == 0
    assert "0 late table(s) of 1 with a freshness" in capsys.readouterr().out
    assert main(["history", "--late", "--sql", "SELECT 1", "--root", str(root)]) == 2
    # A declaration that does not load is not checked: said, and the exit is not 0.
    declared = (folder / "ad_clicks.yaml").read_text()
    (folder / "ad_clicks.yaml").write_text(declared + "freshness: 30\n")
    capsys.readouterr()
    assert main(["history", "--late", "--root", str(root)]) == 2
    said = capsys.readouterr()
    assert "1 late table(s) of 2 with a freshness; 1 declaration(s) not checked" in said.out
    assert said.err.startswith("error: ad_clicks not checked, its declaration does not load: ")
    assert "freshness: 30 has no unit" in said.err
    (folder / "ad_clicks.yaml").write_text(declared)

    # The report's reading of the run reports says the same of each table.
    from jobs import declare

    for name, runs in histories.items():
        pipeline = declare.load(name)
        from_log = {f.pipeline: f for f in freshness.of_logs(str(root), [pipeline], now)}[name]
        from_reports = freshness.of_reports(name, freshness.limit_of(pipeline), runs, now)
        assert (from_log.late, from_log.limit_s, from_log.last_append) == (
            from_reports.late,
            from_reports.limit_s,
            from_reports.last_append,
        )


def _docs_example(page: str, heading: str) -> dict:
    """The YAML example under `heading` in a docs page."""
    import yaml

    from tests.helpers import REPO

    text = (REPO / "docs" / page).read_text()
    section = text[text.index(f"## {heading}\n") :]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))


def test_the_docs_examples_of_freshness_quality_and_deadline_load_and_leave_the_checkpoint_contract_alone():
    """Each setting as the docs write it (a declaration's freshness, quality, airflow deadline)
    loads as documented; misspelt, it is refused with the name meant; none of them changes
    what the state or the table holds, so none is in the checkpoint's contract (a change resumes)."""
    import yaml

    from jobs.declare.load import DeclarationError, from_mapping, pipelines_dir
    from jobs.flow.patterns import pattern_of

    shipped = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    examples = {**_docs_example("history.md", "Freshness"), **_docs_example("history.md", "Anomalies")}
    examples |= _docs_example("airflow.md", "Deadlines")
    pipeline = from_mapping({**shipped, **examples})
    assert pipeline.freshness_s == 2 * 3600
    assert (pipeline.quality.anomalies, pipeline.quality.min_runs) == ("warn", 20)
    assert pipeline.orchestration.deadline_s == 45 * 60
    assert pattern_of(pipeline).contract() == pattern_of(from_mapping(shipped)).contract()
    misspelt = {
        "freshnes": ("2 hours", "did you mean 'freshness'?"),
        "airflow": ({"deadlin": "45 minutes"}, "did you mean 'deadline'?"),
        "quality": ({"anomalys": "warn"}, "did you mean 'anomalies'?"),
    }
    for key, (value, said) in misspelt.items():
        with pytest.raises(DeclarationError, match=re.escape(said)):
            from_mapping({**shipped, key: value})
