"""Landed files the landing source will not read are reported by name, never skipped silently;
a new name is read whatever its modification time."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.helpers import event, land, land_in_order, run_pipeline


def test_an_old_file_is_read_and_one_overwritten_is_reported_not_read(spark, clickstream, locations, caplog):
    land(locations.landing, {"first.json": [event("u1", "2023-07-30T10:00:20Z")]})
    first = run_pipeline(spark, clickstream, locations)
    assert not first.skipped_files

    landing = Path(locations.landing)
    # Copied in with its old modification time kept (cp -p): 10 days before the newest file.
    # Spark's own file source passed such a file over (maxFileAge); a new name is read now.
    old = landing / "old.json"
    old.write_text(event("u2", "2023-07-30T10:00:30Z") + "\n")
    ten_days_ago = time.time() - 10 * 24 * 3600
    os.utime(old, (ten_days_ago, ten_days_ago))
    # Rewritten in place after it was read: new content, new modification time.
    rewritten = landing / "first.json"
    rewritten.write_text("".join(event("u3", "2023-07-30T10:00:40Z") + "\n" for _ in range(3)))
    os.utime(rewritten, (time.time() + 5, time.time() + 5))
    land(locations.landing, {"fresh.json": [event("u4", "2023-07-30T10:00:50Z")]})

    caplog.clear()
    second = run_pipeline(spark, clickstream, locations)

    assert (second.input_files, second.input_rows) == (2, 2)  # old.json and fresh.json
    assert second.skipped_files.too_old == []
    assert [Path(p).name for p in second.skipped_files.overwritten] == ["first.json"]
    [line] = [line for line in "\n".join(caplog.messages).splitlines() if "files never read" in line]
    assert "1 changed after they were read: first.json" in line


def test_a_run_that_lists_part_of_the_landing_does_not_call_the_rest_skipped(spark, clickstream, locations):
    land(locations.landing, {"dt=2023-07-30/a.json": [event("u1", "2023-07-30T10:00:20Z")]})
    run_pipeline(spark, clickstream, locations)
    old = Path(locations.landing) / "dt=2023-07-20" / "b.json"
    old.parent.mkdir()
    old.write_text(event("u2", "2023-07-20T10:00:30Z") + "\n")
    os.utime(old, (time.time() - 10 * 24 * 3600,) * 2)

    report = run_pipeline(spark, clickstream, locations, landing_glob="dt=2023-07-30/*")

    assert not report.skipped_files


def test_files_of_different_batches_with_one_modification_time_are_named(spark, clickstream, locations, caplog):
    land_in_order(locations.landing, {f"t{i}.json": [event(f"u{i}", "2023-07-30T10:00:20Z")] for i in range(3)})
    a_minute_ago = time.time() - 60
    for name in ("t1.json", "t2.json"):  # as a copy that keeps times, or an S3 upload in the same second
        os.utime(Path(locations.landing) / name, (a_minute_ago, a_minute_ago))

    report = run_pipeline(spark, clickstream, locations, max_files_per_trigger=1)

    assert sorted(Path(p).name for p in report.tied_files) == ["t1.json", "t2.json"]
    assert any("2 file(s) in different batches had the same modification time" in line for line in caplog.messages)
