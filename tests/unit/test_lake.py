"""Locations: local paths and s3a:// URIs, and what a run lists under the landing location."""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path

import pytest
from pydantic import ValidationError

from jobs.lake import s3
from jobs.lake.landing import land_files, landing_path
from jobs.lake.layout import Locations, StorageError, normalize
from jobs.units import UsageError


def test_s3_uris_are_normalized_to_s3a():
    assert normalize("s3://lake/prod/") == "s3a://lake/prod"
    assert normalize("s3a://lake") == "s3a://lake"
    with pytest.raises(StorageError, match="no bucket"):
        normalize("s3a:///prefix")
    with pytest.raises(StorageError, match="use a local path or s3a://bucket/prefix"):
        normalize("gs://bucket/prefix")


def test_a_bucket_root_puts_every_location_in_it_but_the_gx_project():
    locations = Locations.resolve("clickstream", root="s3://lake/prod")
    assert locations.uses_s3
    assert locations.landing == "s3a://lake/prod/landing/clickstream"
    assert locations.checkpoint == "s3a://lake/prod/checkpoints/clickstream"
    assert locations.reports == "s3a://lake/prod/reports"
    assert not locations.quality.startswith("s3a://") and locations.quality.endswith("quality/lake/prod")
    assert not Locations.resolve("clickstream", root="/tmp/x").uses_s3


def test_an_archived_file_is_named_where_it_landed():
    """A rebuild reads the archive: a file there and in the landing are one file."""
    locations = Locations.resolve("clickstream", root="s3://lake/prod")
    landed = "s3a://lake/prod/landing/clickstream/dt=2023-07-30/a.json"
    archived = locations.archived_name(landed)
    assert archived == "s3a://lake/prod/archive/clickstream/dt=2023-07-30/a.json"
    assert locations.landed_name(archived) == landed
    assert locations.landed_name(landed) == landed
    assert locations.landed_name("s3a://lake/prod/archive/clickstream-old/a.json").startswith("s3a://lake/prod/archive")


def test_landing_limits(tmp_path):
    for day in ("dt=2023-07-28", "dt=2023-07-30", "dt=2023-08-01", "other"):
        (tmp_path / day).mkdir()
    landing = str(tmp_path)
    assert landing_path(landing) == f"{tmp_path.parent}/{{{tmp_path.name}}}"  # a pattern: never a sink output
    assert landing_path(landing, glob="dt=2023-07-*/*") == f"{landing}/dt=2023-07-*/*"
    since = landing_path(landing, since=date(2023, 7, 29))
    assert since == f"{landing}/{{dt=2023-07-30,dt=2023-08-01}}"
    assert landing_path(landing, since=date(2024, 1, 1)) == f"{landing}/dt=2024-01-01"
    with pytest.raises(UsageError, match="not both"):
        landing_path(landing, glob="*", since=date(2023, 7, 29))
    with pytest.raises(UsageError, match="inside the landing location"):
        landing_path(landing, glob="../elsewhere/*")


def test_spark_settings_for_s3_carry_no_secret(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-print-me")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")
    conf = s3.s3a_settings()
    assert "do-not-print-me" not in str(conf)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    # The AWS SDK v2's own chain, durations as hadoop-aws 3.5 reads them.
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].startswith("software.amazon.awssdk.auth.")
    assert conf["spark.hadoop.fs.s3a.connection.timeout"] == "10s"
    monkeypatch.setenv("JOBS_S3_ATTEMPTS", "many")
    with pytest.raises(ValidationError, match="valid integer"):
        s3.s3a_settings()


def test_landing_gives_each_file_its_own_modification_time(tmp_path):
    """Spark batches files by modification time alone: files landed together keep their order."""
    sources = []
    for i in range(5):
        sources.append(tmp_path / f"e{i}.json")
        sources[-1].write_text("{}\n")
    landed = land_files([str(s) for s in sources], str(tmp_path / "landing"))
    times_ms = [os.stat(path).st_mtime_ns // 10**6 for path in landed]
    assert times_ms == sorted(set(times_ms)) and len(times_ms) == 5


@pytest.fixture
def two_declared(tmp_path, monkeypatch) -> Path:
    """A root whose declarations are clickstream and the join ad_clicks; a file to land."""
    from tests.helpers import declaration_copy

    folder = declaration_copy(tmp_path / "pipelines", "clickstream")
    declaration_copy(folder, "ad_clicks")
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder))
    (tmp_path / "e.json").write_text("{}\n")
    return tmp_path / "root"


def test_land_refuses_a_folder_no_declared_pipeline_reads_and_names_those_they_read(two_declared, capsys):
    from jobs.cli import main

    typo = two_declared / "landing" / "clikstream"
    assert main(["land", str(two_declared.parent / "e.json"), "--to", str(typo), "--root", str(two_declared)]) == 2
    landing = two_declared / "landing"
    assert capsys.readouterr().err == (
        f"error: no declared pipeline reads {typo} (did you mean 'clickstream'?); the declared pipelines read, "
        f"under {landing}: ad_clicks/clicks, ad_clicks/impressions, clickstream. Land into one of those (or a "
        "folder inside one), give the --root they are under, or --force to land there anyway (events for a "
        "pipeline not declared yet, to propose one from them: python -m jobs profile)\n"
    )
    assert not landing.exists()  # nothing landed


@pytest.mark.parametrize("to", ["clickstream", "clickstream/dt=2023-07-30", "ad_clicks/clicks"])
def test_land_lands_where_a_declared_pipeline_reads(two_declared, capsys, to):
    from jobs.cli import main

    folder = two_declared / "landing" / to
    assert main(["land", str(two_declared.parent / "e.json"), "--to", str(folder), "--root", str(two_declared)]) == 0
    assert capsys.readouterr().out == f"{folder / 'e.json'}\n"
    assert (folder / "e.json").read_text() == "{}\n"


def test_land_with_force_lands_where_no_declared_pipeline_reads(two_declared, capsys):
    from jobs.cli import main

    join_folder = two_declared / "landing" / "ad_clicks"  # its sources land in folders of their own
    args = ["land", str(two_declared.parent / "e.json"), "--to", str(join_folder), "--root", str(two_declared)]
    assert main(args) == 2
    assert main([*args, "--force"]) == 0
    assert [p.name for p in join_folder.iterdir()] == ["e.json"]


def _write_to_a_full_disk() -> str:
    try:
        with open("/dev/full", "w") as full:  # a device that is always full
            full.write("x")
    except OSError as error:
        return str(error)
    raise AssertionError("/dev/full took a write")


def test_the_root_cause_of_common_faults_is_one_actionable_line(tmp_path, monkeypatch):
    from jobs.lake.faults import root_cause

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")
    # What the operating system itself says, raised here for real.
    full = _write_to_a_full_disk()
    assert root_cause(f"java.io.IOException: {full}", uses_s3=False).startswith("the disk is full")
    java_denied = f"java.io.FileNotFoundException: {tmp_path}/out/part-0.parquet (Operation not permitted)"
    assert root_cause(f"[STREAM_FAILED] ...\n{java_denied}", uses_s3=False) == (
        f"permission denied on {tmp_path}/out/part-0.parquet: the user running the job must be able to write there"
    )
    # S3 as the AWS SDK for Java (s3a), boto3 and pyarrow put it.
    stalled = (
        "com.amazonaws.SdkClientException: Unable to execute HTTP request: Read timed out",
        'Read timeout on endpoint URL: "http://127.0.0.1:9000/lake/x"',
        "AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 28, Timeout was reached",
    )
    for text in stalled:
        assert root_cause(text, uses_s3=True).startswith("the S3 endpoint http://127.0.0.1:9000 stopped answering"), (
            text
        )
    gone = "Connect to 127.0.0.1:9000 failed: Connection refused"
    for text in (gone, f"S3Exception: We encountered an internal error (Status Code: 500)\n{gone}"):
        assert root_cause(text, uses_s3=True).startswith("cannot reach the S3 endpoint http://127.0.0.1:9000"), text
    assert "refused the credentials" in root_cause("InvalidAccessKeyId: The AWS Access Key Id ...", uses_s3=True)
    assert root_cause("AnalysisException: column x not found", uses_s3=True) is None


def test_both_pointers_are_one_format_and_those_written_before_it_read_the_same(tmp_path):
    from jobs.lake import pointer
    from jobs.lake.builds import current_build, in_use
    from jobs.lake.pointer import Pointer

    published = {"path": "/p/versions/b1", "version": "b1", "published_at": "2026-11-01T00:00:00+00:00", "rows": 3}
    assert Pointer.from_dict(published) == Pointer("b1", "/p/versions/b1", "2026-11-01T00:00:00+00:00", {"rows": 3})
    root = tmp_path / "root"
    own = {"checkpoint": "/b/c", "output": "/b/t", "quarantine": "/b/q", "runs": "/b/r"}
    before = {"build": "fix", **own, "switched_at": "2026-11-02T00:00:00+00:00", "why": ["keys"], "table_version": None}
    before["previous"] = {
        "build": "original",
        "checkpoint": "/o/c",
        "output": "/o/t",
        "quarantine": "/o/q",
        "runs": "/o/r",
    }
    (root / "builds" / "clickstream").mkdir(parents=True)
    (root / "builds" / "clickstream" / pointer.NAME).write_text(json.dumps(before))
    build = current_build(str(root), "clickstream")
    assert (build.id, build.path, build.at, build.previous.id) == ("fix", "/b/t", before["switched_at"], "original")
    locations = in_use("clickstream", str(root))
    assert (locations.checkpoint, locations.output, locations.quarantine, locations.runs) == (
        "/b/c",
        "/b/t",
        "/b/q",
        "/b/r",
    )
    # Written again, it reads the same, in the one format.
    pointer.write(str(root / "builds" / "clickstream"), build)
    again = json.loads((root / "builds" / "clickstream" / pointer.NAME).read_text())
    assert {"id", "path", "at"} <= set(again) and current_build(str(root), "clickstream") == build


def test_a_location_with_credentials_in_it_is_refused_without_echoing_them():
    from jobs.lake.layout import StorageError, normalize

    with pytest.raises(StorageError) as refused:
        normalize("s3a://AKIAEXAMPLE:s3cr3t-value@lake/root")
    assert "s3cr3t-value" not in str(refused.value) and "AKIAEXAMPLE" not in str(refused.value)
    assert "never holds credentials" in str(refused.value)


def test_a_name_with_control_characters_is_shown_escaped(capsys):
    from jobs.cli.files import _print_table

    _print_table({"file": "path"}, [{"path": "/l/a\x1b[2J\n\rforged.json"}])
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "\r" not in shown and "/l/a\\x1b[2J\\n\\rforged.json" in shown
