"""Changes that follow the table graph (issue 74): a chain of three Delta tables (events ->
events with a computed column -> windows), real availableNow runs at each level. A backfill of
one day at the top with --with-downstream replaces that day at every level, each in one
commit, and its rollback undoes them lowest first; the readers' runs after either read none
of it again and owe nothing. A backfill of the top alone is a rewrite the next level passes
over and owes (exit 7) until a backfill of that level redoes the day, which the level below
then owes in turn. The bottom table equals the window model throughout."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jobs.accounting.checkpoint import CheckpointLog
from jobs.cli import main
from jobs.exit_codes import ExitCode
from jobs.lake import builds, delta
from jobs.lake.builds import in_use
from jobs.quality_report.page import render
from jobs.run.events import Finished
from tests.helpers import event, land_in_order, run_pipeline, table_rows
from tests.integration.test_table_sources import RAW, declared
from tests.model import WindowModel, clickstream_reading

TOP = {**RAW, "name": "raw_events", "output": {"format": "delta", "partition_by": "event_date"}}
MIDDLE = {
    "name": "clean_events",
    "source": {"table": "raw_events"},
    "columns": {"shouted": "upper(event)"},
    "output": {"format": "delta", "partition_by": "event_date"},
}
BOTTOM = {
    "name": "clean_per_minute",
    "source": {"table": "clean_events"},
    "watermark": "5 minutes",
    "window": {"duration": "1 minute"},
    "keys": ["user_id"],
    "aggregates": [{"name": "event_count", "function": "count"}],
    "output": {"format": "delta", "partition_by": "window_date"},
}
DAY = "2023-07-30"


def arrival(start: datetime, number: int) -> list[str]:
    """Twelve events 17 s apart from `start`, and one a run of the top quarantines."""
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    lines = [
        event(f"u{j % 3}", (start + timedelta(seconds=17 * j)).strftime(stamp), f"e{number}-{j}") for j in range(12)
    ]
    return [*lines, event(None, start.strftime(stamp))]


def per_minute() -> WindowModel:
    """The bottom's declaration, modelled: events per user in 1-minute windows, watermark 5 minutes."""
    return WindowModel(
        read=clickstream_reading, finish=lambda v: (len(v),), delay=timedelta(minutes=5), window=timedelta(minutes=1)
    )


def with_suites(folder, monkeypatch, checked: dict[str, str]) -> None:
    """A suite for each table (a backfill validates what it stages): its column is never null."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, column in checked.items():
        check = f"  - expect: column_values_to_not_be_null\n    column: {column}\n    severity: fail\n"
        (folder / f"{name}.yaml").write_text(f"table: {name}\nexpectations:\n{check}")
    monkeypatch.setenv("JOBS_EXPECTATIONS_DIR", str(folder))


def backfill(root: str, pipeline: str, backfill_id: str, *more: str) -> int:
    return main(["backfill", pipeline, "--root", root, "--since", DAY, "--until", DAY, "--id", backfill_id, *more])


def said_by(output: str, backfill_id: str) -> list[int]:
    """The versions of a Delta table whose writer was backfill `backfill_id`, or its rollback."""
    return [v for v in delta.versions(output) if backfill_id in delta.said(output, v).values()]


@pytest.mark.slow
def test_a_backfill_follows_the_graph_and_a_rewrite_not_followed_is_owed(spark, tmp_path, monkeypatch, capsys):
    pipelines = declared(tmp_path / "pipelines", monkeypatch, TOP, MIDDLE, BOTTOM)
    with_suites(tmp_path / "expectations", monkeypatch, dict.fromkeys(pipelines, "user_id"))
    root = str(tmp_path / "root")
    chain = [(pipelines[p["name"]], in_use(p["name"], root, p["source"].get("table"))) for p in (TOP, MIDDLE, BOTTOM)]
    top, middle, bottom = (where for _, where in chain)
    model = per_minute()

    def run_chain() -> list:
        return [run_pipeline(spark, pipeline, where) for pipeline, where in chain]

    starts = [datetime(2023, 7, 30, 10, tzinfo=UTC), datetime(2023, 7, 30, 10, 4, tzinfo=UTC)]
    starts.append(datetime(2023, 7, 31, 9, tzinfo=UTC))  # moves every watermark past the day
    for number, start in enumerate(starts):
        lines = arrival(start, number)
        land_in_order(top.landing, {f"dt={start.date()}/part-{number}.json": lines})
        reports = run_chain()
        assert [r.input_rows for r in reports] == [13, 12, 12] and not any(r.owed for r in reports)
        model.run([[line for line in lines if clickstream_reading(line)]])
        assert table_rows(spark, bottom.output) == model.rows()

    # The day again at every level, each replaced in one commit; the readers then read none of it.
    assert backfill(root, "raw_events", "cascade", "--with-downstream") == ExitCode.OK
    assert [len(said_by(where.output, "cascade")) for where in (top, middle, bottom)] == [1, 1, 1]
    assert table_rows(spark, bottom.output) == model.rows()
    assert "replaced in the table: version" in render(root)  # the report lists each level's replacement
    after = run_chain()[1:]
    assert [(r.input_rows, r.owed) for r in after] == [(0, []), (0, [])], after
    # Undone lowest first, each in one commit more; still nothing owed.
    assert main(["backfill", "raw_events", "--root", root, "--id", "cascade", "--rollback", "--with-downstream"]) == 0
    assert [len(said_by(where.output, "cascade")) for where in (top, middle, bottom)] == [2, 2, 2]
    assert [(r.input_rows, r.owed) for r in run_chain()[1:]] == [(0, []), (0, [])]
    assert table_rows(spark, bottom.output) == model.rows()

    # The top alone: the next level passes over its rewrite, and owes it until it redoes the day.
    assert backfill(root, "raw_events", "alone") == ExitCode.OK
    rewrite = f"version {said_by(top.output, 'alone')[0]} (backfill alone) rewrote {DAY} .. {DAY}"
    capsys.readouterr()
    assert main(["plan", "clean_events", "--root", root]) == ExitCode.OK  # what its next run owes, before it runs
    assert "owes what its upstream rewrote" in (planned := capsys.readouterr().out) and rewrite in planned, planned
    owing = run_pipeline(spark, *chain[1])
    assert owing.input_rows == 0 and owing.owed == [
        f"{rewrite}; redo: python -m jobs backfill clean_events --since {DAY} --until {DAY}"
    ]
    assert Finished.ran(owing).code == ExitCode.OWES and "owes 1 upstream rewrite" in owing.summary()
    assert "owes what its upstream rewrote" in render(root)  # the report's verdict on it
    assert backfill(root, "clean_events", "middle") == ExitCode.OK
    assert run_pipeline(spark, *chain[1]).owed == []
    # ... and the level below owes the middle's replacement, until it redoes the day too.
    assert len(run_pipeline(spark, *chain[2]).owed) == 1
    assert backfill(root, "clean_per_minute", "bottom") == ExitCode.OK
    assert run_pipeline(spark, *chain[2]).owed == []
    assert table_rows(spark, bottom.output) == model.rows()

    # A backfill of another day since does not stand in the way of rolling back this one.
    other = ["--since", "2023-07-31", "--until", "2023-07-31", "--id", "other"]
    assert main(["backfill", "raw_events", "--root", root, *other]) == ExitCode.OK
    assert main(["backfill", "raw_events", "--root", root, "--id", "alone", "--rollback"]) == ExitCode.OK


def test_vacuum_keeps_the_files_a_reader_has_not_read_yet(spark, tmp_path, monkeypatch, capsys):
    """A day replaced at the top (the reader not cascaded) after versions the reader has not
    read: VACUUM with no time travel would remove their files, which the reader still reads.
    It keeps them while the reader has not read those versions; the reader then reads their
    rows once, and owes the replacement."""
    top = {**TOP, "retention": {"time_travel": 0}}
    pipelines = declared(tmp_path / "pipelines", monkeypatch, top, MIDDLE)
    with_suites(tmp_path / "expectations", monkeypatch, dict.fromkeys(pipelines, "user_id"))
    root = str(tmp_path / "root")
    raw, clean = pipelines["raw_events"], pipelines["clean_events"]
    up, down = in_use(raw.name, root), in_use(clean.name, root, raw.name)
    start = datetime(2023, 7, 30, 10, tzinfo=UTC)
    land_in_order(up.landing, {f"dt={DAY}/part-0.json": arrival(start, 0)})
    run_pipeline(spark, raw, up)
    assert run_pipeline(spark, clean, down).input_rows == 12
    land_in_order(up.landing, {f"dt={DAY}/part-1.json": arrival(start + timedelta(minutes=4), 1)})
    unread = run_pipeline(spark, raw, up)  # a version the reader has not read
    unread_files = delta.batch_files(up.output, CheckpointLog.of(up).query_id(), unread.batch_ids[0])
    assert backfill(root, "raw_events", "alone") == ExitCode.OK  # removes them from the table
    capsys.readouterr()

    assert main(["maintain", "raw_events", "--root", root]) == ExitCode.OK
    said = capsys.readouterr().out
    assert "vacuum kept removed files longer" in said and "as clean_events has not read version" in said, said
    assert all(Path(path).exists() for path in unread_files)
    after = run_pipeline(spark, clean, down)
    assert after.input_rows == 12 and len(after.owed) == 1


def test_a_rebuild_follows_the_graph_and_its_rollback_goes_back_lowest_first(spark, tmp_path, monkeypatch, capsys):
    """A Delta top, a Parquet middle, a Parquet bottom: a rebuild of the top rewrites its table,
    and a rebuild of the middle switches the table its reader reads; with --with-downstream
    each level is rebuilt after the one it reads, and the rollback goes back lowest first.
    The readers' runs after either read nothing again, owe nothing, and the bottom equals the model."""
    parquet = {"format": "parquet"}
    middle = {**MIDDLE, "output": parquet}
    bottom = {**BOTTOM, "output": {**parquet, "partition_by": "window_date"}}
    pipelines = declared(tmp_path / "pipelines", monkeypatch, TOP, middle, bottom)
    with_suites(tmp_path / "expectations", monkeypatch, dict.fromkeys(pipelines, "user_id"))
    root = str(tmp_path / "root")
    names = ["raw_events", "clean_events", "clean_per_minute"]
    model = per_minute()

    def run_chain() -> list:
        where = [in_use(name, root, pipelines[name].source.table) for name in names]
        return [run_pipeline(spark, pipelines[name], at) for name, at in zip(names, where, strict=True)]

    for number, start in enumerate([datetime(2023, 7, 30, 10, tzinfo=UTC), datetime(2023, 7, 30, 10, 4, tzinfo=UTC)]):
        lines = arrival(start, number)
        land_in_order(in_use("raw_events", root).landing, {f"dt={DAY}/part-{number}.json": lines})
        assert [r.input_rows for r in run_chain()] == [13, 12, 12]
        model.run([[line for line in lines if clickstream_reading(line)]])

    def bottom_table() -> list[tuple]:
        return table_rows(spark, in_use("clean_per_minute", root, "clean_events").output)

    assert bottom_table() == model.rows()
    assert main(["rebuild", "raw_events", "--root", root, "--id", "again", "--with-downstream"]) == ExitCode.OK
    assert [builds.current_build(root, name).id for name in names] == ["again"] * 3
    after = run_chain()
    assert [(r.input_rows, r.owed) for r in after] == [(0, [])] * 3, after
    assert bottom_table() == model.rows()

    assert main(["rebuild", "raw_events", "--root", root, "--rollback", "--with-downstream"]) == ExitCode.OK
    assert all(builds.current_build(root, name).id != "again" for name in names)
    after = run_chain()
    assert [(r.input_rows, r.owed) for r in after] == [(0, [])] * 3, after
    assert bottom_table() == model.rows()

    # Rebuilt again, then rows appended by the new build: the rollback removes them, and the
    # previous build appends them again, so the readers are rebuilt rather than rolled back,
    # and read those rows once.
    assert main(["rebuild", "raw_events", "--root", root, "--id", "twice", "--with-downstream"]) == ExitCode.OK
    lines = arrival(datetime(2023, 7, 30, 10, 8, tzinfo=UTC), 2)
    land_in_order(in_use("raw_events", root).landing, {f"dt={DAY}/part-2.json": lines})
    assert [r.input_rows for r in run_chain()] == [13, 12, 12]
    model.run([[line for line in lines if clickstream_reading(line)]])
    capsys.readouterr()
    assert main(["rebuild", "raw_events", "--root", root, "--rollback", "--with-downstream"]) == ExitCode.OK
    assert "its readers are rebuilt after it, not rolled back" in capsys.readouterr().out
    assert all(builds.current_build(root, name).id != "twice" for name in names)
    after = run_chain()
    assert [(r.input_rows, r.owed) for r in after] == [(13, []), (12, []), (12, [])], after
    assert bottom_table() == model.rows()
