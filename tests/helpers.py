"""Helpers the tests share: events, landing, in-process runs, reading tables back.

Fixtures live in conftest.py; everything here is a plain function a test imports.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import socket
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.ledger import Ledger
from jobs.flow.tally import Tally
from jobs.lake.delta import is_delta
from jobs.lake.fs import list_names
from jobs.lake.landing import land_lines
from jobs.lake.locks import CheckpointLock
from jobs.request import RunRequest
from jobs.run import runner
from jobs.run.context import RunContext
from jobs.run.report import RunReport

REPO = Path(__file__).resolve().parent.parent
# A secret that must never appear in anything a run prints or writes (tests/integration/test_s3.py).
S3_SECRET = f"test-secret-{secrets.token_hex(8)}"
S3_BUCKET = "lake"
CLICKSTREAM_TABLE = "window_start timestamp, window_end timestamp, user_id string, event_count long, window_date date"


def free_port() -> int:
    """A port nothing listens on at 127.0.0.1, for a server a test starts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def modes(path: Path) -> tuple[str, str]:
    """A file's permission bits, and what the process umask makes of 0660 (octal): equal when
    the file was written readable by its owner and group only, as the product writes what
    holds producers' values (docs/storage.md)."""
    current = os.umask(0)
    os.umask(current)
    return f"{path.stat().st_mode & 0o777:o}", f"{0o660 & ~current:o}"


def event(user: str | None, timestamp: str | None, event_id: str = "e", **extra: object) -> str:
    """A clickstream record as a JSON line (None leaves a field out)."""
    record = {"event_id": event_id, "event": "click", **extra}
    if user is not None:
        record["user_id"] = user
    if timestamp is not None:
        record["eventtimestamp"] = timestamp
    return json.dumps(record)


def land(landing: str, files: dict[str, list[str]]) -> list[str]:
    """Land files atomically, like a producer would."""
    return land_lines(files, landing)


def land_in_order(landing: str, files: dict[str, list[str]]) -> None:
    """One file at a time: the file source orders a batch by modification time only,
    so distinct times make the order of one-file batches certain."""
    for name, lines in files.items():
        land(landing, {name: lines})
        time.sleep(0.02)


def all_lines(files: dict[str, list[str]]) -> list[str]:
    """Every line of an arrival's files, in landing order."""
    return [line for lines in files.values() for line in lines]


def run_pipeline(spark, pipeline, locations, **options) -> RunReport:
    """An in-process run on the shared session (what it logs: the `caplog` fixture)."""
    return runner.run(pipeline, RunRequest(pipeline.name, locations, **options), spark=spark)


def run_closed_range(spark, pipeline, locations, **options) -> RunReport:
    """A backfill's range run in-process as jobs/backfill/stage.py's reprocess runs it: the
    range, then (if the pattern holds windows back) the batch that closes it."""
    from jobs.backfill.stage import close_range

    report = run_pipeline(spark, pipeline, locations, **options)
    return run_pipeline(spark, pipeline, locations, **options) if close_range(pipeline, locations) else report


def run_context(spark, pipeline, locations) -> RunContext:
    """What a run works with, to call one of its steps (retention, accounting) alone."""
    return RunContext(
        spark=spark,
        pipeline=pipeline,
        locations=locations,
        request=RunRequest(pipeline.name, locations),
        checkpoint_log=CheckpointLog.of(locations),
        ledger=Ledger(locations.ledger),
        tally=Tally(spark),
        dimension=None,
        lock=CheckpointLock(locations.ledger, pipeline.name),
        run_id="test",
        emit=lambda event: None,
        log=logging.getLogger("tests"),
    )


def python_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "jobs", *args]


def delta_rs_rows(output: str, columns: list[str]) -> list[tuple]:
    """A Delta table's rows as delta-rs (the `deltalake` package, no Spark) reads them: the
    columns' values, timestamps in UTC."""
    from jobs.lake.delta import read_table

    return [tuple(row[c] for c in columns) for row in read_table(output, columns).to_pylist()]


def table_rows(spark, output: str) -> list[tuple]:
    """The clickstream table as sorted (window_start, window_end, user_id, event_count), in UTC.

    Read with its schema through its log (Parquet's sink log or Delta's), so a table whose
    batches committed no file yet reads as empty; works for local paths and s3a:// alike."""
    if not list_names(output):
        return []
    if is_delta(output):
        rows = spark.read.format("delta").load(output).collect()
    else:
        rows = spark.read.schema(CLICKSTREAM_TABLE).parquet(output).collect()
    return sorted(
        (r.window_start.replace(tzinfo=UTC), r.window_end.replace(tzinfo=UTC), r.user_id, r.event_count) for r in rows
    )


def replace_parquet_file(spark, target: Path, rows) -> None:
    """Replace one committed clickstream Parquet file with `rows` (a pandas DataFrame), as a
    bad writer would: the sink log still lists it, so readers take the new content."""
    scratch = target.parent.parent.parent / f"scratch-{secrets.token_hex(3)}"
    schema = "window_start timestamp, window_end timestamp, user_id string, event_count long"
    spark.createDataFrame(rows, schema).coalesce(1).write.parquet(str(scratch))
    (part,) = scratch.glob("part-*.parquet")
    shutil.move(part, target)
    shutil.rmtree(scratch)
    (target.parent / f".{target.name}.crc").unlink()  # Hadoop's checksum of the old content


def assert_run_matches(report: RunReport, expected) -> None:
    """A run's row accounting equals the model's for the same batches."""
    assert (report.input_rows, report.quarantined_rows, report.late_rows_dropped, report.used_rows) == (
        expected.input_rows,
        expected.quarantined_rows,
        expected.late_rows_dropped,
        expected.used_rows,
    )
    assert report.output_rows == len(expected.emitted)
    assert report.duplicates_dropped == expected.duplicates_dropped
    broken = {name: count.violations for name, count in report.rules.items() if count.violations}
    assert broken == expected.violations, "violations per rule"


def declaration_copy(folder: Path, name: str, **changes: object) -> Path:
    """A pipelines folder (for JOBS_PIPELINES_DIR) with a shipped declaration, changed."""
    import yaml

    from jobs.declare.load import pipelines_dir

    raw = yaml.safe_load((pipelines_dir() / f"{name}.yaml").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(yaml.safe_dump({**raw, **changes}))
    return folder


def own_module(folder: Path, source: str) -> str:
    """A module of a team's own, in its declarations folder, under a fresh name; its name."""
    name = f"team_{secrets.token_hex(4)}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    return name


def finished_run(now: datetime, pipeline: str, number: int, hours_ago: float, output_rows: int) -> RunReport:
    """A run report as a run that started `hours_ago` before `now`, took a minute and wrote
    `output_rows` (0: it appended nothing) would store it."""
    started = now - timedelta(hours=hours_ago)
    return RunReport(
        run_id=f"{started:%Y%m%dT%H%M%SZ}-{number:06d}",
        pipeline=pipeline,
        trigger="available-now",
        started_at=started.isoformat(),
        ended_at=(started + timedelta(minutes=1)).isoformat(),
        status="succeeded",
        input_rows=output_rows,
        used_rows=output_rows,
        batch_ids=[number],
        batches=1,
        output_rows=output_rows,
    )
