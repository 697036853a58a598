"""Real availableNow runs over several arrivals, compared with the plain-Python model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from jobs.accounting.batches import account_batches
from jobs.accounting.checkpoint import CheckpointLog
from jobs.columns import LINE, SOURCE_FILE
from jobs.flow.admission import Limits
from jobs.flow.parse import parse_events, usable
from jobs.flow.patterns import pattern_of
from jobs.flow.query import start_query
from jobs.flow.source import batch_sizes, stream_lines
from jobs.lake.landing import new_files_path
from jobs.request import Trigger
from jobs.run.report import load_reports
from tests.helpers import (
    all_lines,
    assert_run_matches,
    event,
    land,
    land_in_order,
    run_context,
    run_pipeline,
    table_rows,
)
from tests.model import ClickstreamModel

T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


# Four arrivals: events across 20 minutes, late events once the watermark has moved,
# events for several users in the same window, and a few unusable lines.
ARRIVALS = [
    {
        "a1.json": [event("u1", at(0.1)), event("u1", at(0.5)), event("u2", at(0.9)), event("u2", at(3.2))],
        "a1b.json": [event("u3", at(1.5)), "{broken", event(None, at(1.0))],
    },
    # Watermark now 09:58:12: nothing here is late yet.
    {"a2.json": [event("u1", at(7.5)), event("u2", at(8.1)), event("u1", at(2.5)), event("u3", at(0.2))]},
    # Watermark now 10:03:06: windows ending 10:02 and 10:03 are late, 10:04 is not.
    {
        "a3.json": [event("u1", at(12.0)), event("u1", at(1.5)), event("u2", at(2.9)), event("u2", at(2.9))],
        "a3b.json": [event("u3", at(3.1), page="/x"), event("u3", at(7.0))],
    },
    # Watermark now 10:07:00: a window ending exactly at 10:07 is late; 10:08 is not.
    {"a4.json": [event("u2", at(20.0)), event("u2", at(6.0)), event("u1", at(7.01)), event("u1", "not a time"), ""]},
]


def test_arrivals_match_the_model_run_by_run(spark, clickstream, locations):
    model = ClickstreamModel()
    for arrival in ARRIVALS:
        land(locations.landing, arrival)
        report = run_pipeline(spark, clickstream, locations)
        expected = model.run([all_lines(arrival)])

        assert report.status == "succeeded"
        assert report.input_files == len(arrival)
        assert_run_matches(report, expected)
        assert report.watermark == model.next_watermark.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert report.state_rows == len(model.state)
        assert table_rows(spark, locations.output) == model.rows()
    # The fixture has late rows and quarantined rows, or it proves little.
    assert sum(r.late_rows_dropped for r in load_reports(locations.runs)) == 4
    assert sum(r.quarantined_rows for r in load_reports(locations.runs)) == 3


def test_a_run_with_no_new_files_writes_nothing(spark, clickstream, locations, root):
    land(locations.landing, ARRIVALS[0])
    run_pipeline(spark, clickstream, locations)
    files_before = sorted(p.name for p in root.rglob("*") if "runs" not in p.parts)

    report = run_pipeline(spark, clickstream, locations)

    assert report.status == "succeeded"
    assert (report.batches, report.input_rows, report.output_rows) == (0, 0, 0)
    assert sorted(p.name for p in root.rglob("*") if "runs" not in p.parts) == files_before
    assert len(load_reports(locations.runs)) == 2


def test_rate_limited_run_matches_the_model_batch_by_batch(spark, clickstream, locations):
    """One file per batch: late rows are judged against the previous batch's watermark."""
    files = {
        "f1.json": [event("u1", at(20.0))],
        # u9's window ends at 10:15, exactly the watermark this batch runs with: kept,
        # because late rows are judged against the previous batch's watermark (none yet).
        "f2.json": [event("u2", at(30.0)), event("u9", at(14.5))],
        # u3 (10:20:30) is behind this batch's watermark (10:25) but not the previous one.
        "f3.json": [event("u3", at(20.5)), event("u4", at(26.5)), event("u5", at(14.0))],
    }
    land_in_order(locations.landing, files)
    report = run_pipeline(spark, clickstream, locations, max_files_per_trigger=1)

    model = ClickstreamModel()
    expected = model.run(list(files.values()))
    assert report.batches == 3
    assert (report.input_rows, report.late_rows_dropped, report.used_rows) == (
        expected.input_rows,
        expected.late_rows_dropped,
        expected.used_rows,
    )
    assert expected.late_rows_dropped == 1  # u5 only
    assert table_rows(spark, locations.output) == model.rows()


def test_trigger_once_reads_everything_in_one_batch(spark, clickstream, locations, caplog):
    for arrival in ARRIVALS[:2]:
        land(locations.landing, arrival)
    report = run_pipeline(spark, clickstream, locations, trigger=Trigger("once"), max_files_per_trigger=1)
    # Said before Spark reads them: the cap is not what bounds this batch.
    assert "trigger once reads them all in one batch: 3 new files, more than the 1 a batch takes" in caplog.text

    model = ClickstreamModel()
    lines = [line for arrival in ARRIVALS[:2] for lines in arrival.values() for line in lines]
    expected = model.run([lines], trailing_batch=False)
    assert (report.trigger, report.batches, report.input_files) == ("once", 1, 3)
    assert report.input_rows == expected.input_rows
    assert report.output_rows == len(expected.emitted) == 0
    # Windows the moved watermark closed wait for the next run that has new data:
    # without new files, no batch runs at all.
    assert run_pipeline(spark, clickstream, locations).output_rows == 0
    land(locations.landing, ARRIVALS[2])
    follow_up = run_pipeline(spark, clickstream, locations)
    expected = model.run([all_lines(ARRIVALS[2])])
    assert follow_up.output_rows == len(expected.emitted) > 0
    assert table_rows(spark, locations.output) == model.rows()


def test_late_rows_match_sparks_own_count_when_no_two_share_a_window(spark, clickstream, locations):
    """Ties the accounting's late-row rule to Spark's: numRowsDroppedByWatermark counts
    groups, which equals rows when every late row is alone in its (window, user)."""
    land(locations.landing, {"first.json": [event("u1", at(30.0))]})
    run_pipeline(spark, clickstream, locations)
    late = [event(f"late{i}", at(i)) for i in range(5)] + [event("fresh", at(29.0))]
    land(locations.landing, {"second.json": late})

    query = start_query(
        spark,
        clickstream,
        paths=[locations.landing],
        landings=[locations.landing],
        output=locations.output,
        checkpoint=locations.checkpoint,
        trigger=Trigger(),
    )
    query.awaitTermination()
    dropped_by_spark = sum(p.stateOperators[0].numRowsDroppedByWatermark for p in query.recentProgress)

    run = run_context(spark, clickstream, locations)
    new = [b for b in run.checkpoint_log.committed_batches() if b not in run.ledger.accounted_batches()]
    accounts = account_batches(run, new, store=True)
    assert dropped_by_spark == 5
    assert sum(a.late_rows_dropped for a in accounts) == 5


def test_transforms_give_the_same_windows_in_batch_and_streaming(spark, clickstream, locations):
    """The pure transforms on a batch DataFrame agree with what the streaming run wrote
    for windows the watermark has closed."""
    lines = [line for arrival in ARRIVALS for lines in arrival.values() for line in lines]
    land(locations.landing, {"all.json": lines})
    run_pipeline(spark, clickstream, locations)

    batch = (
        spark.read.text(locations.landing)
        .select(F.col("value").alias(LINE), F.lit("x").alias(SOURCE_FILE))
        .transform(parse_events, clickstream.source)
        .transform(usable)
        .transform(pattern_of(clickstream).table)
    )
    streamed = spark.read.parquet(locations.output)
    closed = batch.join(streamed.select("window_start", "user_id"), ["window_start", "user_id"], "left_semi")
    assertDataFrameEqual(closed.select(*streamed.columns), streamed)
    assert streamed.count() > 3


def test_output_layout_and_columns(spark, clickstream, locations, root):
    land(locations.landing, ARRIVALS[0] | ARRIVALS[1])
    run_pipeline(spark, clickstream, locations)
    table = spark.read.parquet(locations.output)
    assert table.columns == ["window_start", "window_end", "user_id", "event_count", "window_date"]
    assert dict(table.dtypes) == {
        "window_start": "timestamp",
        "window_end": "timestamp",
        "user_id": "string",
        "event_count": "bigint",
        "window_date": "date",
    }
    assert {p.name for p in (root / "tables" / "clickstream").iterdir()} >= {
        "_spark_metadata",
        "window_date=2023-07-30",
    }


def test_max_bytes_per_trigger_splits_a_backlog_into_batches(spark, clickstream, locations):
    files = {f"b{i}.json": [event("u1", at(i)), event("u2", at(i + 0.5))] for i in range(3)}
    land_in_order(locations.landing, files)
    report = run_pipeline(spark, clickstream, locations, max_bytes_per_trigger=1)  # at least one file per batch
    data_batches = [b for b in report.batch_ids if CheckpointLog.of(locations).source_files(b)]
    assert len(data_batches) == 3
    assert report.input_rows == 6 and report.used_rows == 6


def _batches_of_files(spark, landing: Path, checkpoint: Path, limits: Limits) -> tuple[list[int], list[dict]]:
    """How many files each batch of a count per file took (a state row per file), and what
    the sized source chose."""
    taken: list[int] = []
    counts = stream_lines(spark, str(landing), str(landing), limits).groupBy(SOURCE_FILE).count()
    query = (
        counts.writeStream.outputMode("update")
        .foreachBatch(lambda batch, _: taken.append(batch.count()))  # update: this batch's files
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return [n for n in taken if n], batch_sizes(query.lastProgress.sources)


def test_batches_after_the_first_are_sized_by_the_state_the_query_keeps(spark, tmp_path):
    line = "x" * 99  # files of 100 bytes each: a batch of N bytes takes N / 100 of them
    landing = tmp_path / "landing"
    land_in_order(str(landing), {f"f{i:02}.json": [line] for i in range(12)})
    floor, cap = 200, 600

    # A state of a few hundred bytes against a budget of a GiB: after the first batch, the most.
    roomy = Limits(None, floor, "default", sized_cap=cap, state_budget=2**30)
    files, sizes = _batches_of_files(spark, landing, tmp_path / "roomy", roomy)
    assert files == [2, 6, 4]
    # One choice per batch that took files after the first, with the bytes its batch read.
    assert [(s["after_batch"], s["max_bytes"], s["input_bytes"]) for s in sizes] == [(0, cap, 200), (1, cap, 600)]
    assert all(s["state_bytes"] > 0 for s in sizes)

    # A state already past its budget: every batch stays at the default.
    tight = Limits(None, floor, "default", sized_cap=cap, state_budget=1)
    files, sizes = _batches_of_files(spark, landing, tmp_path / "tight", tight)
    assert files == [2] * 6
    assert [(s["after_batch"], s["max_bytes"]) for s in sizes] == [(b, floor) for b in range(5)]

    # A limit the run was given is every batch's.
    given = Limits(None, floor, "run")
    assert _batches_of_files(spark, landing, tmp_path / "given", given) == ([2] * 6, [])

    # However many bytes are left, a batch takes at most `most_files` files.
    few = Limits(None, floor, "default", sized_cap=cap, state_budget=2**30, most_files=5)
    assert _batches_of_files(spark, landing, tmp_path / "few", few)[0] == [2, 5, 5]


def test_many_small_files_are_read_by_a_few_tasks_and_listed_by_a_few(spark, tmp_path):
    """Spark's defaults give each tiny file the cost of 4 MiB and list a batch's files in a
    job of a task per file: a file per event would cost a Python round trip per 32 files."""
    from jobs.flow.source import read_lines
    from jobs.session import LISTING_PARALLELISM, OPEN_COST

    paths = []
    for number in range(200):
        path = tmp_path / f"dt=2023-07-{number % 2 + 1:02d}" / f"event-{number:03d}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(event(f"u{number}", at(number)) + "\n")
        paths.append(str(path))
    lines = read_lines(spark, paths)
    cores = spark.sparkContext.defaultParallelism
    assert lines.rdd.getNumPartitions() <= 2 * cores < 200 // 32  # Spark's defaults: 7 tasks
    assert sorted(row[LINE] for row in lines.collect()) == sorted(Path(p).read_text().strip() for p in paths)
    assert spark.conf.get(LISTING_PARALLELISM) == str(2 * cores) and spark.conf.get(OPEN_COST) == str(64 * 2**10)


def test_files_named_with_a_glob_s_characters_are_each_read_once(spark, clickstream, locations):
    """A run hands Spark the names of the few new files (a glob of literal names), not the
    landing to list: names with spaces, commas, brackets, braces, a star and a percent sign
    are each read once, across runs."""
    names = ["a b.json", "c,d.json", "e[1].json", "f{g}.json", "h*.json", "i%20.json"]
    model = ClickstreamModel()
    for number, name in enumerate(names):
        files = {name: [event(f"u{number}", f"2023-07-30T10:0{number}:00Z", event_id=f"x{number}")]}
        land(locations.landing, files)
        report = run_pipeline(spark, clickstream, locations)
        assert report.input_files == 1, name
        assert_run_matches(report, model.run([all_lines(files)]))
    assert table_rows(spark, locations.output) == model.rows()


def test_the_new_files_path_matches_the_named_files_level_by_level(spark, tmp_path):
    """Hadoop's glob of the new files' names, as the source is handed it: a brace of names
    per level (a glob's characters escaped), no file taken before but one named so; the
    landing itself when the new files lie at different depths."""
    landing = tmp_path / "landing"
    names = ["dt=2023-07-30/a b.json", "dt=2023-07-30/c,d.json", "dt=2023-07-31/e[1]{2}*.json", "x,y/f.json"]
    old = ["top.json", "dt=2023-07-30/old.json", "dt=2023-07-31/e1.json", "x/f.json", "dt=2023-07-31/sub/a b.json"]
    for name in names + old:
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        (landing / name).write_text(name + "\n")
    for chosen in (names, names[:1], names[1:3], names[3:], ["top.json"]):
        path = new_files_path(str(landing), tuple(str(landing / name) for name in chosen))
        read = spark.read.format("text").option("recursiveFileLookup", "true").load(path)
        assert sorted(row.value for row in read.collect()) == sorted(chosen), path
    assert new_files_path(str(landing), (str(landing / "top.json"), str(landing / names[0]))) is None
