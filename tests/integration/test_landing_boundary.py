"""A landing is its regular files and nothing else (issue 69): a link, an S3 key with a '..'
segment or a folder named `_spark_metadata`, which a producer or a careless operator can put
there, never makes a run read, count or delete anything outside it. More than 32 new files
make Spark list the landing itself (jobs/run/pending.py NAMED_FILES), so each case is tried
through Spark's own listing, then through the product's (a few files named)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from jobs import declare
from jobs.declare.operations import Retention
from jobs.flow.source import read_lines
from jobs.lake.layout import Locations
from jobs.run.messages import _COMMAND
from jobs.run.pending import NAMED_FILES
from jobs.run.runner import RunStoppedOnData
from tests.helpers import event, land, run_pipeline
from tests.landings import ENTRIES

MANY = NAMED_FILES + 8


def _events(prefix: str, count: int) -> dict[str, list[str]]:
    """One event a file, each its own user (so that every file is seen in the table)."""
    return {
        f"{prefix}-{n:03d}.json": [event(f"{prefix}{n}", "2023-07-30T10:00:00Z", f"{prefix}-{n}")] for n in range(count)
    }


def _outside(tmp_path: Path) -> tuple[Path, Path]:
    """A file and a folder beside the landing, each with an event no run may read."""
    secret = tmp_path / "outside" / "secret.json"
    folder = tmp_path / "outside" / "folder"
    folder.mkdir(parents=True)
    secret.write_text(event("outsider-file", "2023-07-30T10:00:00Z", "secret") + "\n")
    (folder / "x.json").write_text(event("outsider-folder", "2023-07-30T10:00:00Z", "x") + "\n")
    return secret, folder


@pytest.mark.timeout(300)  # before, two loops made every listing endless
def test_links_are_never_followed_read_counted_or_removed(spark, tmp_path, caplog):
    pipeline = declare.load("clickstream").model_copy(update={"retention": Retention(landed="delete", landed_after=0)})
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    secret, folder = _outside(tmp_path)
    land(locations.landing, _events("a", MANY))
    landing = Path(locations.landing)
    (landing / "secret.json").symlink_to(secret)
    (landing / "linkdir").symlink_to(folder, target_is_directory=True)
    (landing / "loop").symlink_to(".", target_is_directory=True)
    (landing / "loop2").symlink_to(".", target_is_directory=True)  # two loops: a listing without end

    first = run_pipeline(spark, pipeline, locations)  # Spark lists the landing

    assert (first.input_files, first.input_rows, first.used_rows) == (MANY, MANY, MANY)
    links = {str(landing / name) for name in ("secret.json", "linkdir", "loop", "loop2")}
    assert set(first.skipped_files.not_files) == links
    (warning,) = [w for w in first.warnings if w.startswith("not_files:")]
    assert all(repr(link) in warning or link in warning for link in links)
    assert first.retention.deleted == MANY  # the landed files, and nothing through a link
    assert secret.read_text().startswith("{") and (folder / "x.json").exists()
    assert sorted(p.name for p in landing.iterdir()) == ["linkdir", "loop", "loop2", "secret.json"]

    land(locations.landing, _events("b", 1))
    second = run_pipeline(spark, pipeline, locations)  # the product names the new file

    assert (second.input_files, second.input_rows) == (1, 1)
    assert set(second.skipped_files.not_files) == links
    assert not list(Path(locations.quarantine).rglob("*.json")), "nothing read from outside reached the quarantine"


def test_a_file_taken_through_a_link_by_an_older_run_is_never_removed(spark, tmp_path):
    """What an older version of the product took through a link stays in its ledger: retention
    resolves each path and leaves one outside the landing alone."""
    from tests.helpers import run_context

    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    _, folder = _outside(tmp_path)
    land(locations.landing, {"sub/a.json": [event("u1", "2023-07-30T10:00:00Z")]})
    run_pipeline(spark, pipeline, locations)
    sub = Path(locations.landing) / "sub"
    (sub / "a.json").rename(folder / "a.json")  # the folder it was read from is a link now
    sub.rmdir()
    sub.symlink_to(folder, target_is_directory=True)

    from jobs.run.retention import apply_retention

    run = run_context(
        spark, pipeline.model_copy(update={"retention": Retention(landed="delete", landed_after=0)}), locations
    )
    done = apply_retention(run)

    assert (done.deleted, done.left_alone) == (0, [str(sub / "a.json")])
    assert (folder / "a.json").exists() and (folder / "x.json").exists()


ODD_NAMES = ["a:b", "[a]", "{a,b}", "*", "%41", "#x", "?", "q'\"uote", "sp ace", "back\\slash", "ü:ß"]


def test_names_odd_to_hadoop_uris_and_globs_are_read_once_each(spark, tmp_path):
    """Before, a file named `a:b.json` failed every run (Hadoop made its checksum file's path
    as a string, where `a:` reads as a URI scheme), and `quarantine-file` could not help: only
    moving the file away by hand did. Through Spark's listing (many new files), then through
    the names the product hands it (a few)."""
    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    odd = {f"{name}.json": [event(f"odd{n}", "2023-07-30T10:00:00Z", f"odd-{n}")] for n, name in enumerate(ODD_NAMES)}
    land(locations.landing, {**_events("a", MANY), **odd})
    assert (Path(locations.landing) / "a:b.json").exists()

    listed = run_pipeline(spark, pipeline, locations)

    assert (listed.input_files, listed.input_rows, listed.used_rows) == (MANY + len(odd),) * 3
    land(locations.landing, {f"2-{name}": lines for name, lines in odd.items()})
    named = run_pipeline(spark, pipeline, locations)
    assert (named.input_files, named.input_rows, named.used_rows) == (len(odd),) * 3
    # As a batch is read again when a crashed run's batch is accounted, or a file quarantined.
    plain = [str(Path(locations.landing) / name) for name in ("a:b.json", "ü:ß.json", "sp ace.json")]
    assert read_lines(spark, plain).count() == len(plain)


def test_a_producer_s_spark_metadata_folder_is_not_taken_for_a_sink_s_output(spark, tmp_path):
    """Given the landing as a path, Spark reads the files a `_spark_metadata` log in it names,
    wherever they are, in place of the landing's own: before, the outside file's line was used
    and the landed files were never read."""
    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    secret, _ = _outside(tmp_path)
    land(locations.landing, _events("a", MANY))
    log = Path(locations.landing) / "_spark_metadata"
    log.mkdir()
    entry = {"path": secret.as_uri(), "size": secret.stat().st_size, "isDir": False, "modificationTime": 1}
    (log / "0").write_text("v1\n" + json.dumps({**entry, "blockReplication": 1, "blockSize": 1, "action": "add"}))

    report = run_pipeline(spark, pipeline, locations)

    assert (report.input_files, report.input_rows, report.used_rows) == (MANY, MANY, MANY)


def test_s3_keys_with_odd_segments_are_named_never_read(spark, s3_root):
    """`landing/p/../../secret/creds.json` is `secret/creds.json` once Hadoop reads it: another
    prefix's object. Before, with more than 32 new files, Spark read it."""
    from jobs.lake import s3
    from jobs.lake.layout import split_bucket

    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=s3_root)
    bucket, landing_key = split_bucket(locations.landing)
    root_key = split_bucket(s3_root)[1]
    client = s3.client()
    client.put_object(
        Bucket=bucket, Key=f"{root_key}/secret/creds.json", Body=event("outsider", "2023-07-30T10:00:00Z")
    )
    land(locations.landing, _events("a", MANY))
    odd = ["p/../../../secret/creds.json", "q//empty.json", "r/./dot.json", "s/../inside.json"]
    for key in odd:
        client.put_object(Bucket=bucket, Key=f"{landing_key}/{key}", Body=event("odd", "2023-07-30T10:00:00Z") + "\n")

    report = run_pipeline(spark, pipeline, locations)

    assert (report.input_files, report.input_rows, report.used_rows) == (MANY, MANY, MANY)
    assert set(report.skipped_files.not_files) == {f"{locations.landing}/{key}" for key in odd}
    assert any(w.startswith("not_files: 4 entries") for w in report.warnings)


def test_a_pasted_command_runs_nothing_else_and_gets_the_pipeline_past_the_file(spark, tmp_path):
    """A file named `batch$(id>pwned).json` breaks a `fail` rule. Before, the command the error
    gave, pasted into bash, ran `id` and quarantined `batch.json`, which does not exist, so the
    pipeline stayed stuck."""
    from jobs.cli import main

    pipeline = declare.load("clickstream")
    root = tmp_path / "root"
    locations = Locations.resolve(pipeline.name, root=str(root))
    name = "batch$(id>pwned).json"
    land(locations.landing, {name: [event("loadtest-1", "2023-07-30T10:00:00Z")]})
    with pytest.raises(RunStoppedOnData) as stopped:
        run_pipeline(spark, pipeline, locations)
    (command,) = {a or b for a, b in _COMMAND.findall(str(stopped.value))}
    assert command.startswith("python -m jobs quarantine-file clickstream ")

    venv_bin = str(Path(sys.executable).parent)
    pasted = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        env={**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert pasted.returncode == 0, pasted.stderr
    assert not list(tmp_path.rglob("pwned")), "the shell ran the producer's command"
    report = run_pipeline(spark, pipeline, locations)
    assert (report.input_rows, report.quarantine_reasons["file_quarantined"].rows) == (1, 1)
    # A name the shell cut short (`batch.json`) is refused, naming the file it could mean.
    land(locations.landing, {"batch-2.json": [event("u1", "2023-07-30T10:00:00Z")]})
    assert (
        main(
            ["quarantine-file", "clickstream", f"{locations.landing}/batch.json", "--root", str(root), "--reason", "x"]
        )
        == 3
    )


def test_a_long_line_in_one_member_of_a_concatenated_gzip_is_counted_and_quarantined(spark, tmp_path):
    """`cat a.gz b.gz`: the trailer says only the last member's size. Before, the long line in
    the first member was passed over without a trace (2,501 rows, none quarantined)."""
    from jobs.flow.source import READ_LIMIT
    from jobs.lake.landing import land_files

    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    first = event("u0", "2023-07-30T10:00:00Z").encode() + b"\n" + b'{"user_id": "' + b"x" * READ_LIMIT + b'"}\n'
    rest = "".join(event(f"u{n % 7}", "2023-07-30T10:00:00Z", f"e{n}") + "\n" for n in range(2500)).encode()
    both = tmp_path / "both.json.gz"
    both.write_bytes(gzip.compress(first) + gzip.compress(rest))
    land_files([str(both)], locations.landing)

    report = run_pipeline(spark, pipeline, locations)

    assert (report.input_rows, report.quarantined_rows, report.used_rows) == (2502, 1, 2501)
    assert report.quarantine_reasons["record_too_large"].rows == 1


def test_a_producer_s_field_names_never_meet_the_product_s_columns(spark, tmp_path):
    """Fields named as the flow's own columns once were (`source_file`, `line`, `line_number`):
    before, an inferred schema with `source_file` failed every run with AMBIGUOUS_REFERENCE.
    Now the flow's columns are in a namespace of their own, and an inferred field named as an
    output column (`event_time`) or in that namespace is read under another name, said once."""
    pipeline = declare.load("clickstream_inferred")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))

    def events(first: int) -> dict[str, list[str]]:
        return {
            f"e{first}.json": [
                json.dumps(
                    {
                        "user_id": f"u{n}",
                        "eventtimestamp": "2023-07-30T10:00:00Z",
                        "source_file": f"producer-{n}.csv",
                        "line": f"line {n}",
                        "line_number": n,
                        "event_time": "not the product's",
                        "_jobs_reason": "mine",
                    }
                )
                for n in range(first, first + 5)
            ]
        }

    land(locations.landing, events(0))
    first = run_pipeline(spark, pipeline, locations)
    land(locations.landing, events(5))
    second = run_pipeline(spark, pipeline, locations)

    assert [(r.input_rows, r.used_rows, r.quarantined_rows) for r in (first, second)] == [(5, 5, 0), (5, 5, 0)]
    table = spark.read.parquet(locations.output)
    columns = ["user_id", "source_file", "line", "line_number", "event_time_1", "_jobs_reason_1"]
    rows = sorted(tuple(r) for r in table.select(*columns).collect())
    assert rows == sorted(
        (f"u{n}", f"producer-{n}.csv", f"line {n}", n, "not the product's", "mine") for n in range(10)
    )
    assert {r.event_time.isoformat() for r in table.select("event_time").collect()} == {"2023-07-30T10:00:00"}


SPARK_EXAMPLES = int(os.environ.get("JOBS_HYPOTHESIS_SPARK_EXAMPLES", "4")) * 5


@settings(max_examples=SPARK_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=ENTRIES)
def test_spark_lists_a_generated_landing_as_the_product_does(spark, entries):
    """Through the file system the product gives Spark (io.triggeronce.jobs.fs) and the pattern
    it hands the file source (the landing alone), Spark reads exactly the regular files inside
    the landing, each once: the two listings cannot disagree."""
    from jobs.flow.source import LANDING_OPTIONS
    from jobs.lake import listings
    from jobs.lake.layout import folder_pattern, from_spark
    from tests.landings import make

    with tempfile.TemporaryDirectory() as scratch:
        landing, expected = make(Path(scratch), entries)
        reader = spark.read.format("text").option("recursiveFileLookup", "true").options(**LANDING_OPTIONS)
        read = reader.load(folder_pattern(str(landing)))
        files = [from_spark(row.file_path) for row in read.select("_metadata.file_path").collect()]

        assert sorted(set(files)) == sorted(expected) == sorted(listings.listing(str(landing)).files)
        assert len(files) == len(expected)  # one line each: each file read once


def test_a_landing_read_by_two_pipelines_is_refused_unless_both_share_it_then_retention_waits(spark, tmp_path):
    """Before, two pipelines given one landing each applied their own retention to files the
    other had not read."""
    from jobs.run.runner import RunRefused

    def shared(pipeline, **retention):
        source = pipeline.source.model_copy(update={"shared": True})
        return pipeline.model_copy(update={"source": source, "retention": Retention(**retention)})

    root = str(tmp_path / "root")
    clicks, unique = declare.load("clickstream"), declare.load("clickstream_unique")
    mine = Locations.resolve(clicks.name, root=root)
    theirs = Locations.resolve(unique.name, root=root, landing=mine.landing)
    land(mine.landing, {"a.json": [event("u1", "2023-07-30T10:00:00Z", "a")]})
    run_pipeline(spark, clicks, mine)

    with pytest.raises(RunRefused, match="is read by pipeline 'clickstream' too"):
        run_pipeline(spark, unique, theirs)
    assert not (Path(theirs.checkpoint) / "offsets").exists(), "a refused run read nothing"
    assert sorted(p.name for p in Path(theirs.readers).iterdir()) == ["clickstream.json"]

    run_pipeline(spark, shared(clicks), mine)  # says it shares its landing now (and keeps its files)
    assert run_pipeline(spark, shared(unique), theirs).input_rows == 1  # reads a.json
    deleting = shared(clicks, landed="delete", landed_after=0)
    land(mine.landing, {"b.json": [event("u2", "2023-07-30T10:00:00Z", "b")]})
    first = run_pipeline(spark, deleting, mine)
    assert (first.retention.deleted, sorted(p.name for p in Path(mine.landing).iterdir())) == (1, ["b.json"])
    second = run_pipeline(spark, shared(unique), theirs)
    assert second.input_rows == 1, "the other reader still found b.json"
    third = run_pipeline(spark, deleting, mine)
    assert (third.retention.deleted, list(Path(mine.landing).iterdir())) == (1, [])
