"""A rebuild: clickstream changed from 1-minute to 5-minute windows, every landed file read
again into a new build while files keep landing and the build in use keeps running; the
switch; runs after it; the rollback. Each build's table against the window model of the
batches that build ran (tests/model.py), each file in each build's file ledger once."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from demo import samples
from jobs import declare
from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.file_ledger import taken_files
from jobs.accounting.ledger import Ledger
from jobs.change import rebuild
from jobs.change.plan import REPROCESS
from jobs.declare.computing import Window
from jobs.declare.load import pipelines_dir
from jobs.lake.builds import current_build, in_use
from jobs.lake.layout import Locations
from jobs.quality_report import page as quality_report
from jobs.run.runner import RunRefused
from tests.helpers import all_lines, event, land, run_pipeline, table_rows
from tests.histories import USERS, ordered, table, write_users
from tests.model import AdJoinModel, ClickstreamModel, EventsModel, RuleBook, SpendingSessionsModel, enriched_row

T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)


def arrival(number: int) -> dict[str, list[str]]:
    """Ten events over four minutes, ten minutes after the previous arrival's."""
    start = T0 + timedelta(minutes=10 * number)
    lines = [
        event(f"u{i % 2}", (start + timedelta(seconds=25 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"), f"e{number}-{i}")
        for i in range(10)
    ]
    return {f"arrival-{number}.json": lines}


def ledger_files(locations: Locations) -> list[str]:
    checkpoint_log = CheckpointLog.of(locations)
    return [taken["path"].rsplit("/", 1)[1] for taken in taken_files(Ledger(locations.ledger), checkpoint_log)]


@pytest.mark.parametrize("table_format", ["parquet", "delta"])
def test_a_changed_window_rebuilt_while_files_land_then_the_switch_and_the_rollback(
    spark, clickstream, tmp_path, table_format
):
    old = clickstream.model_copy(update={"output": clickstream.output.model_copy(update={"format": table_format})})
    new = old.model_copy(update={"window": Window(duration_s="300 seconds", slide_s="300 seconds")})
    root = str(tmp_path / "root")
    original = Locations.resolve(old.name, root=root)
    old_model, new_model = ClickstreamModel(), replace(ClickstreamModel(), window=timedelta(minutes=5))
    arrivals = {n: arrival(n) for n in range(1, 7)}
    for n in (1, 2):
        land(original.landing, arrivals[n])
        assert run_pipeline(spark, old, original).status == "succeeded"
        old_model.run([all_lines(arrivals[n])])

    # The rebuild's first run, under the changed declaration; the build in use goes on meanwhile.
    plan = rebuild.start(spark, new, root, "five-minutes")
    assert plan.verdict == REPROCESS and "window_duration_s: 60 -> 300" in plan.changes
    new_model.run([all_lines(arrivals[1]) + all_lines(arrivals[2])])
    land(original.landing, arrivals[3])
    assert run_pipeline(spark, old, original).status == "succeeded"  # still the build in use
    old_model.run([all_lines(arrivals[3])])
    land(original.landing, arrivals[4])  # landed during the rebuild, taken by no run yet

    switched = rebuild.switch(spark, new, root, "five-minutes", plan)
    new_model.run([all_lines(arrivals[3]) + all_lines(arrivals[4])])

    build = in_use(new.name, root)  # what runs and readers resolve now
    assert current_build(root, new.name).id == "five-minutes"
    assert build.checkpoint == switched.about["checkpoint"] != original.checkpoint
    # arrival 4 was read once, by the new build; the old one took 1 to 3, the new one 1 to 4.
    assert ledger_files(original) == ["arrival-1.json", "arrival-2.json", "arrival-3.json"]
    assert sorted(ledger_files(build)) == [f"arrival-{n}.json" for n in range(1, 5)]
    assert table_rows(spark, build.output) == new_model.rows()
    if table_format == "delta":
        assert build.output == original.output  # readers read the same table, switched in one commit
    else:
        assert table_rows(spark, original.output) == old_model.rows()  # the old build's table, as it was
    with pytest.raises(RunRefused, match="retired"):
        run_pipeline(spark, old, original)  # the old checkpoint, named explicitly: refused

    land(original.landing, arrivals[5])
    assert run_pipeline(spark, new, build).status == "succeeded"
    new_model.run([all_lines(arrivals[5])])
    assert table_rows(spark, build.output) == new_model.rows()

    # Back: the old build's checkpoint and table; it takes what the new build took since.
    back = rebuild.roll_back(spark, new, root)
    assert back.id == rebuild.ORIGINAL
    resolved = in_use(old.name, root)
    assert (resolved.checkpoint, resolved.output) == (original.checkpoint, original.output)
    # The declaration goes back too: the changed one is refused with the way back (the YAML the
    # build was made with, kept with its checkpoint), not sent to rebuild as if nothing was built.
    with pytest.raises(RunRefused, match="`rebuild --rollback` went back to") as refused:
        run_pipeline(spark, new, resolved)
    kept = Ledger(original.ledger).declaration_yaml
    assert f"Put back the declaration that build was made with (kept as {kept})" in str(refused.value)
    assert Path(kept).read_text() == clickstream.as_written == (pipelines_dir() / "clickstream.yaml").read_text()
    land(original.landing, arrivals[6])
    assert run_pipeline(spark, old, resolved).status == "succeeded"
    old_model.run([all_lines(arrivals[4]) + all_lines(arrivals[5]) + all_lines(arrivals[6])])
    assert table_rows(spark, original.output) == old_model.rows()
    assert ledger_files(original) == [f"arrival-{n}.json" for n in range(1, 7)]
    assert "Build <b>original</b> again since" in quality_report.render(root)
    with pytest.raises(RunRefused, match="retired"):
        run_pipeline(spark, new, build)


def test_a_wrongly_declared_field_fixed_and_rebuilt_uses_the_lines_it_quarantined(spark, clickstream, tmp_path):
    """event_id declared `long`, sent as text: every event quarantined. Fixed (`string`) and
    rebuilt, the new build uses them, and its switch counts them."""
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    raw["source"]["schema"]["event_id"] = "long"
    wrong = declare.from_mapping(raw)
    root = str(tmp_path / "root")
    original = Locations.resolve(clickstream.name, root=root)
    arrivals = [arrival(1), arrival(2)]
    for files in arrivals:
        land(original.landing, files)
        report = run_pipeline(spark, wrong, original)
        assert (report.input_rows, report.quarantined_rows) == (10, 10)

    found = rebuild.start(spark, clickstream, root, "fixed")
    assert found.verdict == "resumes"  # the field's type is no part of the checkpoint: a rebuild is a choice
    switched = rebuild.switch(spark, clickstream, root, "fixed", found)

    assert switched.about["previously_quarantined_now_used"] == 20
    page = quality_report.render(root)  # the pipeline's history shows the switch
    assert "Build <b>fixed</b> since" in page and "20 lines build original quarantined are used now" in page
    model = ClickstreamModel()
    model.run([all_lines(arrivals[0]) + all_lines(arrivals[1])])
    assert table_rows(spark, in_use(clickstream.name, root).output) == model.rows()

    # The wrong declaration again, as a rebuild: it would quarantine every row the build in use
    # uses, so it is not switched to (the table stays whole) unless the rebuild accepts it.
    with pytest.raises(rebuild.RebuildError) as refused:
        rebuild.rebuild(spark, wrong, root, "wrong-again")
    assert "build wrong-again quarantined 20 of the 20 rows it read (100.0%" in str(refused.value)
    assert "the build in use 0 of 20 (0.0%): not switched to it" in str(refused.value)
    assert "--accept-quarantine" in str(refused.value)
    assert current_build(root, clickstream.name).id == "fixed"
    assert table_rows(spark, in_use(clickstream.name, root).output) == model.rows()


def test_a_processor_pipeline_rebuilt_with_a_shorter_gap(spark, tmp_path):
    """spending_sessions: its sessions made again from every transaction with a 30-minute gap."""
    shipped = declare.load("spending_sessions")
    settings = shipped.process.settings.model_copy(update={"gap_s": 1800})
    shorter = shipped.model_copy(update={"process": shipped.process.model_copy(update={"settings": settings})})
    root = str(tmp_path / "root")
    original = Locations.resolve(shipped.name, root=root)
    lines = []
    for number in range(3):
        start = T0 + timedelta(minutes=70 * number)  # a user's pauses: 14 minutes within, 42 between
        batch = [
            json.dumps(
                {
                    "userId": f"u{i % 2}",
                    "transactionId": f"t{number}-{i}",
                    "transactionTime": (start + timedelta(minutes=7 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "amount": 1.5 * i,
                }
            )
            for i in range(5)
        ]
        lines += batch
        land(original.landing, {f"transactions-{number}.json": batch})
        assert run_pipeline(spark, shipped, original).status == "succeeded"
    late = T0 + timedelta(hours=6)  # a transaction hours later closes every session so far
    closing = [
        json.dumps(
            {
                "userId": u,
                "transactionId": f"z{u}",
                "transactionTime": late.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "amount": 0.0,
            }
        )
        for u in ("u0", "u1")
    ]
    land(original.landing, {"transactions-late.json": closing})

    switched = rebuild.rebuild(spark, shorter, root, "gap-30m")

    model, hourly = SpendingSessionsModel(gap=timedelta(minutes=30)), SpendingSessionsModel()
    model.run([lines + closing])
    hourly.run([lines + closing])
    assert len(model.rows()) == 6 and len(hourly.rows()) == 2  # the change changes the sessions
    build = in_use(shipped.name, root)
    assert build.checkpoint == switched.about["checkpoint"]
    assert table(spark, shorter, build) == ordered(model.rows())
    assert sorted(ledger_files(build)) == sorted(
        [f"transactions-{n}.json" for n in range(3)] + ["transactions-late.json"]
    )


@pytest.mark.parametrize("table_format", ["parquet", "delta"])
def test_a_rebuild_in_a_bucket(spark, clickstream, s3_root, table_format):
    """The same in S3 (moto): the plan's listings and table schema, the build, the switch."""
    s3_root = s3_root.replace("[", "-").replace("]", "")  # Hadoop reads brackets in a path as a glob
    old = clickstream.model_copy(update={"output": clickstream.output.model_copy(update={"format": table_format})})
    new = old.model_copy(update={"window": Window(duration_s="300 seconds", slide_s="300 seconds")})
    original = Locations.resolve(old.name, root=s3_root)
    arrivals = [arrival(1), arrival(2)]
    for files in arrivals:
        land(original.landing, files)
        assert run_pipeline(spark, old, original).status == "succeeded"

    found = rebuild.start(spark, new, s3_root, "in-a-bucket")
    assert found.verdict == REPROCESS and found.landed.files == 2 and found.schema_before == found.schema_after
    switched = rebuild.switch(spark, new, s3_root, "in-a-bucket", found)

    model = replace(ClickstreamModel(), window=timedelta(minutes=5))
    model.run([all_lines(arrivals[0]) + all_lines(arrivals[1])])
    build = in_use(new.name, s3_root)
    assert build.checkpoint == switched.about["checkpoint"] and build.checkpoint.startswith("s3a://")
    assert table_rows(spark, build.output) == model.rows()


def test_a_rebuild_reads_retention_s_archive_and_each_file_once(spark, clickstream, tmp_path):
    """Retention archives each file once its batch is accounted. The rebuild reads the archive,
    then the landing; a file it read from the landing and retention archived since is not read
    again, one archived before the build listed the landing is (at the switch, by name). The
    build it replaced is kept `previous_build` long (here 0): the next run removes it."""
    archiving = clickstream.model_copy(
        update={"retention": clickstream.retention.model_copy(update={"landed": "archive", "landed_after_s": 0})}
    )
    new = archiving.model_copy(
        update={
            "window": Window(duration_s="300 seconds", slide_s="300 seconds"),
            "retention": archiving.retention.model_copy(update={"previous_build_s": 0}),
        }
    )
    root = str(tmp_path / "root")
    original = Locations.resolve(archiving.name, root=root)
    arrivals = {n: arrival(n) for n in range(1, 6)}
    for n in (1, 2):
        land(original.landing, arrivals[n])
        assert run_pipeline(spark, archiving, original).status == "succeeded"
    land(original.landing, arrivals[3])
    assert sorted(p.name for p in Path(original.archive).iterdir()) == ["arrival-1.json", "arrival-2.json"]

    plan = rebuild.start(spark, new, root, "archive-too")  # reads 1 and 2 archived, 3 landed
    assert (plan.landed.files, plan.archived.files, plan.lost) == (1, 2, [])
    assert run_pipeline(spark, archiving, original).status == "succeeded"  # takes 3, archives it
    land(original.landing, arrivals[4])
    assert run_pipeline(spark, archiving, original).status == "succeeded"  # takes 4, archives it
    land(original.landing, arrivals[5])
    rebuild.switch(spark, new, root, "archive-too", plan)

    build = in_use(new.name, root)
    assert ledger_files(original) == [f"arrival-{n}.json" for n in range(1, 5)]  # the build's runs moved none
    taken = ledger_files(build)
    assert sorted(taken) == [f"arrival-{n}.json" for n in range(1, 6)]  # each once, under one name
    model = replace(ClickstreamModel(), window=timedelta(minutes=5))
    model.run([[line for n in range(1, 6) for line in all_lines(arrivals[n])]])
    assert table_rows(spark, build.output) == model.rows()

    # Runs of the new build archive what they read; the first removes the build it replaced.
    land(original.landing, arrival(6))
    report = run_pipeline(spark, new, build)
    assert report.retention.builds_removed == ["original"]
    # 5 and 6 archived; 3 too, by the old build after the new one read it from the landing.
    assert (report.retention.archived, report.retention.already_gone) == (2, 1)
    assert [p.relative_to(original.checkpoint).as_posix() for p in Path(original.checkpoint).rglob("*.json")] == [
        "_pipeline/retired.json"
    ]
    assert not Path(original.output).exists() and not Path(original.quarantine).exists()
    with pytest.raises(RunRefused, match="retired"):
        run_pipeline(spark, archiving, original)  # nothing resumes it
    with pytest.raises(rebuild.RebuildError, match=r"build original was removed at .* \(retention.previous_build\)"):
        rebuild.roll_back(spark, new, root)


def test_an_events_pipeline_rebuilt_keeps_the_events_it_quarantined_unmatched(spark, tmp_path):
    """clickstream_enriched (events, Delta): events of users the dimension lacks were
    quarantined; declared `unmatched: keep` and rebuilt, they are in the table, with nulls."""
    shipped = declare.load("clickstream_enriched")
    keeping = shipped.model_copy(update={"enrich": shipped.enrich.model_copy(update={"unmatched": "keep"})})
    root = str(tmp_path / "root")
    original = Locations.resolve(shipped.name, root=root)
    write_users(original, USERS)
    arrivals = samples.arrivals(shipped.name)
    for files in arrivals:
        land(original.landing, files)
        assert run_pipeline(spark, shipped, original).status == "succeeded"

    switched = rebuild.rebuild(spark, keeping, root, "keep-unmatched")

    lines = [line for files in arrivals for line in all_lines(files)]
    before = EventsModel(lambda line: enriched_row(line, USERS), RuleBook.of(shipped.name))
    after = EventsModel(lambda line: enriched_row(line, USERS, unmatched="keep"), RuleBook.of(shipped.name))
    before.run([lines])
    after.run([lines])
    assert len(after.rows()) > len(before.rows())  # the samples have users the dimension lacks
    assert switched.about["previously_quarantined_now_used"] == len(after.rows()) - len(before.rows())
    build = in_use(shipped.name, root)
    assert build.output == original.output  # Delta: the same table, switched in one commit
    assert table(spark, keeping, build) == ordered(after.rows())


def test_a_join_pipeline_rebuilt_with_a_longer_interval(spark, tmp_path):
    """ad_clicks (a stream-stream join, Delta): clicks matched to impressions up to 2 hours
    before them instead of 1; the join's state is made again from every file."""
    shipped = declare.load("ad_clicks")
    longer = shipped.model_copy(update={"join": shipped.join.model_copy(update={"within_s": 7200})})
    root = str(tmp_path / "root")
    original = Locations.resolve(shipped.name, root=root)
    arrivals = samples.arrivals(shipped.name)
    for files in arrivals:
        land(original.landing, files)
        assert run_pipeline(spark, shipped, original).status == "succeeded"

    found = rebuild.start(spark, longer, root, "two-hours")
    # Spark keeps the join's state whatever the interval: runs would go on, matching by the
    # new interval from then on; a rebuild matches every click again.
    assert found.verdict == "resumes"
    switched = rebuild.switch(spark, longer, root, "two-hours", found)

    lines = [line for files in arrivals for line in all_lines(files)]
    model, one_hour = AdJoinModel(within=timedelta(hours=2)), AdJoinModel()
    model.run([lines])  # the build's one batch
    one_hour.run([lines])
    assert len(model.rows()) > len(one_hour.rows())  # the samples have clicks 1 to 2 hours after their ad
    build = in_use(shipped.name, root)
    assert build.checkpoint == switched.about["checkpoint"]
    assert table(spark, longer, build) == ordered(model.rows())
    assert len(ledger_files(build)) == sum(len(files) for files in arrivals)
