"""A pipeline that reads another pipeline's table (issue 74, `source: {table: ...}`): real
availableNow queries at both levels, the downstream table equal to the window model fed
the upstream's usable records, and every upstream row read once: the downstream's input,
file by file, is what the upstream's sink log committed (its files' rows as a Parquet reader
outside Spark counts them)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger
from jobs.cli import main
from jobs.lake.builds import in_use
from jobs.launch import execute, finished_of
from jobs.request import RunRequest
from jobs.run.runner import RunRefused
from tests.helpers import REPO, event, land_in_order, run_pipeline, table_rows
from tests.integration.test_lineage import configure_file
from tests.model import WindowModel, clickstream_reading

T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)

RAW = {
    "name": "raw_clicks",
    "source": {
        "format": "json",
        "schema": {"event_id": "string", "user_id": "string", "event": "string", "eventtimestamp": "string"},
        "required": ["user_id"],
        "event_time": {"column": "eventtimestamp"},
    },
    "output": {"format": "parquet"},
}
# The reader docs/graph.md declares, as the page shows it: the page's example is what runs here.
PER_MINUTE = yaml.safe_load(re.search(r"```yaml\n(.*?)```", (REPO / "docs" / "graph.md").read_text(), re.S).group(1))


def declared(folder: Path, monkeypatch, *raws: dict) -> dict[str, declare.PipelineBase]:
    folder.mkdir(parents=True, exist_ok=True)
    for raw in raws:
        (folder / f"{raw['name']}.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder))
    return declare.load_all(folder)


def arrival(number: int) -> list[str]:
    """Twelve events a few seconds apart, four minutes after the arrival before; a late one,
    one without a user and a broken line, which the upstream quarantines."""
    base = T0 + timedelta(minutes=4 * number)
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    lines = [
        event(f"u{j % 3}", (base + timedelta(seconds=17 * j)).strftime(stamp), f"e{number}-{j}") for j in range(12)
    ]
    return [
        *lines,
        event(None, base.strftime(stamp)),
        "{broken",
        event("u1", (base - timedelta(minutes=7)).strftime(stamp)),
    ]


def rows_per_file(files: list[str]) -> dict[str, int]:
    """Rows of each data file, as pyarrow reads its footer."""
    return {path: pq.ParquetFile(path.removeprefix("file:")).metadata.num_rows for path in files}


def test_a_window_pipeline_reads_an_events_table_each_committed_row_once(spark, tmp_path, monkeypatch, capsys):
    pipelines = declared(tmp_path / "pipelines", monkeypatch, RAW, PER_MINUTE)
    raw, per_minute = pipelines["raw_clicks"], pipelines["clicks_per_minute"]
    assert per_minute.source.event_time.column == "eventtimestamp"
    root = str(tmp_path / "root")
    upstream, downstream = in_use(raw.name, root), in_use(per_minute.name, root, reads=raw.name)
    assert downstream.landing == upstream.output

    # Before the upstream has a table: refused, saying what to run.
    with pytest.raises(RunRefused, match="run its pipeline first"):
        run_pipeline(spark, per_minute, downstream)

    model = WindowModel(
        read=clickstream_reading,
        finish=lambda values: (len(values),),
        delay=timedelta(minutes=5),
        window=timedelta(minutes=1),
    )
    read_before: set[str] = set()
    for number in range(3):
        lines = arrival(number)
        land_in_order(upstream.landing, {f"part-{number}.json": lines})
        up = run_pipeline(spark, raw, upstream)
        assert up.used_rows == 13 and up.quarantined_rows == 2, up
        if number == 0:  # the reader's plan before its first run: the table's schema, as that run takes it
            from jobs.change.plan import plan

            found = plan(spark, per_minute, downstream)
            assert found.verdict == "new" and "window_start" in found.schema_after
        down = run_pipeline(spark, per_minute, downstream)
        # The upstream's usable records, once each, in one batch of the downstream's.
        expected = model.run([[line for line in lines if clickstream_reading(line)]])
        assert down.rows_balance and down.input_rows == up.used_rows == 13, down
        assert down.quarantined_rows == 0 and down.late_rows_dropped == expected.late_rows_dropped
        assert table_rows(spark, downstream.output) == model.rows()
        # The upstream's batch this run read, and its rows (one landed file, one batch, one data file).
        assert up.batch_ids == [number] and down.upstream_batches == {str(number): 13}

        # File by file: what the downstream took is what the upstream's sink log committed.
        committed = CheckpointLog("", upstream.output).committed_output_files()
        taken = {
            f["path"]: f["input_rows"] for f in taken_files(Ledger(downstream.ledger), CheckpointLog.of(downstream))
        }
        assert set(taken) == set(committed)
        assert taken == rows_per_file(list(committed))
        assert set(taken) - read_before and sum(taken[p] for p in set(taken) - read_before) == 13
        read_before = set(taken)

    # Nothing new upstream: the downstream starts no Spark.
    idle = run_pipeline(spark, per_minute, downstream)
    assert idle.batch_ids == [] and idle.input_rows == 0

    # Lineage: the reader's input is the dataset its upstream's output is, so the events form the graph.
    events = tmp_path / "lineage.jsonl"
    configure_file(monkeypatch, events)
    land_in_order(upstream.landing, {"part-3.json": arrival(3)})
    for pipeline, locations in ((raw, upstream), (per_minute, downstream)):
        request = RunRequest(pipeline.name, locations, validate=False)
        assert finished_of(execute(request, pipeline=pipeline, spark=spark)).status == "succeeded"
    completed = {
        e["job"]["name"]: e for e in map(json.loads, events.read_text().splitlines()) if e["eventType"] == "COMPLETE"
    }
    [written] = completed["raw_clicks"]["outputs"]
    [read] = completed["clicks_per_minute"]["inputs"]
    assert (read["namespace"], read["name"]) == (written["namespace"], written["name"])
    assert read["facets"]["symlinks"]["identifiers"][0]["name"] == "raw_clicks"
    assert read["inputFacets"]["inputStatistics"]["rowCount"] == 13

    # The data quality report's graph: each table, what it reads, what reads it.
    from jobs.quality_report.page import render

    page = render(root)
    graph = page[page.index('id="graph"') :]
    assert graph.index('data-table="raw_clicks"') < graph.index('data-table="clicks_per_minute"')
    assert "&rarr; clicks_per_minute" in graph and "&larr; raw_clicks" in graph

    # The file ledger names each upstream data file with the upstream's batch that committed it.
    assert main(["files", per_minute.name, "--root", root, "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted((f["upstream_batch"], f["input_rows"]) for f in listed) == [(n, 13) for n in range(4)]


def test_a_reader_of_a_delta_table_reads_each_version_once(spark, tmp_path, monkeypatch, capsys):
    """A Delta upstream through Delta's streaming source: each run reads the versions committed
    since, whole, each file once; the run report and `files` name the upstream's versions."""
    from jobs.lake import delta

    raw_delta = {**RAW, "name": "raw_delta", "output": {"format": "delta"}}
    reader = {**PER_MINUTE, "name": "delta_per_minute", "source": {"table": "raw_delta"}}
    pipelines = declared(tmp_path / "pipelines", monkeypatch, raw_delta, reader)
    raw, per_minute = pipelines["raw_delta"], pipelines["delta_per_minute"]
    root = str(tmp_path / "root")
    upstream, downstream = in_use(raw.name, root), in_use(per_minute.name, root, reads=raw.name)
    model = WindowModel(
        read=clickstream_reading,
        finish=lambda values: (len(values),),
        delay=timedelta(minutes=5),
        window=timedelta(minutes=1),
    )
    for number in range(3):
        lines = arrival(number)
        land_in_order(upstream.landing, {f"part-{number}.json": lines})
        up = run_pipeline(spark, raw, upstream)
        down = run_pipeline(spark, per_minute, downstream)
        version = delta.versions(upstream.output)[-1]  # the upstream's one batch of this run
        expected = model.run([[line for line in lines if clickstream_reading(line)]])
        assert down.rows_balance and down.input_rows == up.used_rows == 13, down
        assert down.late_rows_dropped == expected.late_rows_dropped
        assert table_rows(spark, downstream.output) == model.rows()
        assert down.upstream_batches == {str(version): 13}, down.upstream_batches
        # What the downstream took is what the table holds, file by file (rows as pyarrow counts them).
        committed = delta.table_files(upstream.output)
        taken = {
            f["path"]: f["input_rows"] for f in taken_files(Ledger(downstream.ledger), CheckpointLog.of(downstream))
        }
        assert taken == rows_per_file(list(committed))

    idle = run_pipeline(spark, per_minute, downstream)
    assert idle.batch_ids == [] and idle.input_rows == 0
    assert main(["files", per_minute.name, "--root", root, "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(f["input_rows"] for f in listed) == [13, 13, 13]
    assert {f["upstream_batch"] for f in listed} == set(delta.versions(upstream.output)[-3:])
