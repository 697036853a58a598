"""Names producers and operators choose, read as names: a root, a folder or a file named with
every character Hadoop reads as a pattern (and commas, spaces, '%', '#', unicode) is read
exactly, never as a pattern. What Spark reads is asked of Spark itself (`inputFiles`: its
own listing of what a path names, without a job); what it must read is worked out here from
the names alone."""

from __future__ import annotations

import itertools
import os
import string
from datetime import date
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs import declare
from jobs.backfill import backfill_request, publish
from jobs.flow.source import read_lines
from jobs.lake.landing import dated_folders, folder_date, landing_path, new_files_path, undated
from jobs.lake.layout import Locations, from_spark, literal
from tests.helpers import all_lines, event, land_in_order, run_pipeline, table_rows
from tests.model import ClickstreamModel

EXAMPLES = int(os.environ.get("JOBS_HYPOTHESIS_SPARK_EXAMPLES", "4")) * 3

# Hadoop's pattern characters, the brace's separator, and what a URI or a shell would take apart.
HOSTILE = "\\*?[]{},"
ODD = " %#!$&'()+;=@~^`é日🙂-"
# A name: not hidden (Spark passes over names starting with '.' or '_'), no '/', and no ':'
# (Hadoop's glob reads 'a:b' as a scheme: no pattern names such a file, and a run lists the
# landing whole for it; tests/integration/test_landing_boundary.py reads such names).
names = st.text(alphabet=HOSTILE + ODD + string.ascii_letters + string.digits, min_size=1, max_size=12).filter(
    lambda name: not name.startswith((".", "_")) and name not in (".", "..")
)


def read_by_spark(spark, path: str | list[str]) -> set[str]:
    """The files Spark's text source reads for `path`, as the product names locations."""
    reader = spark.read.format("text").option("recursiveFileLookup", "true")
    return {from_spark(uri) for uri in reader.load(path).inputFiles()}


def make(files: list[Path]) -> set[str]:
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text('{"a": 1}\n')
    return {str(file) for file in files}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    root=names,
    folders=st.lists(names, min_size=1, max_size=3, unique=True),
    files=st.lists(names, min_size=2, max_size=4, unique=True),
    data=st.data(),
)
def test_a_landing_and_its_files_are_read_by_name_whatever_they_are_called(
    spark, tmp_path_factory, root, folders, files, data
):
    landing = tmp_path_factory.mktemp("names") / root / "landing"
    every = make([landing / folder / file for folder, file in itertools.product(folders, files)])

    # The whole landing, as a run lists it.
    assert read_by_spark(spark, landing_path(str(landing))) == every
    # The new files by name (a pattern per level: a name of one folder matches in another too).
    chosen = data.draw(st.lists(st.sampled_from(sorted(every)), min_size=1, max_size=3, unique=True))
    levels = [{Path(f).parent.name for f in chosen}, {Path(f).name for f in chosen}]
    expected = {f for f in every if Path(f).parent.name in levels[0] and Path(f).name in levels[1]}
    assert read_by_spark(spark, new_files_path(str(landing), tuple(chosen))) == expected
    # Given files, as a batch reads them (accounting, quarantine-file).
    assert read_by_spark(spark, [literal(f) for f in chosen]) == set(chosen)
    assert {from_spark(uri) for uri in read_lines(spark, chosen).inputFiles()} == set(chosen)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(root=names, others=st.lists(names.map(lambda tail: "dt=2023-07-30" + tail), min_size=1, max_size=3, unique=True))
def test_a_date_range_takes_only_its_dt_folders_whatever_else_is_there(spark, tmp_path_factory, root, others):
    landing = tmp_path_factory.mktemp("dates") / root / "landing"
    days = ["dt=2023-07-29", "dt=2023-07-30", "dt=2023-07-31", "dt=2023-08-01"]
    make([landing / folder / "part.json" for folder in [*days, *others, "dt=2023-07-30,*"]])

    in_range = dated_folders(str(landing), date(2023, 7, 30), date(2023, 7, 31))
    assert sorted(in_range) == ["dt=2023-07-30", "dt=2023-07-31"]
    assert set(undated(os.listdir(landing))) == {*others, "dt=2023-07-30,*"} - set(days)
    listed = landing_path(str(landing), since=date(2023, 7, 30), until=date(2023, 7, 31))
    assert read_by_spark(spark, listed) == {str(landing / day / "part.json") for day in in_range}


def test_only_a_real_date_is_a_dated_folder():
    assert folder_date("dt=2023-07-30") == date(2023, 7, 30)
    for name in (
        "dt=2023-07-30,*",
        "dt=2023-07-30[",
        "dt=2023-02-30",
        "dt=2023-7-30",
        "dt=\uff12\uff10\uff12\uff13-07-30",
        "x",
    ):
        assert folder_date(name) is None, name


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(root=names, folders=st.lists(names, min_size=1, max_size=3, unique=True), inner=names)
def test_the_index_of_taken_files_reads_any_folder_name_as_the_source_wrote_it(
    spark, tmp_path_factory, root, folders, inner
):
    """The landing source keys its index by each folder's name under the landing, hashed in the
    JVM; the product's listing asks it in Python: both must name every folder alike, or a
    file would be taken twice (or never)."""
    from jobs.accounting.checkpoint import CheckpointLog
    from jobs.request import RunRequest
    from jobs.run.pending import pending_input

    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(tmp_path_factory.mktemp("index") / root))
    where = [*folders, f"{folders[0]}/{inner}"]
    files = {f"{folder}/f{n}.json": [event("u1", f"2023-07-30T10:{n:02d}:00Z")] for n, folder in enumerate(where)}
    land_in_order(locations.landing, files)
    first = run_pipeline(spark, pipeline, locations)
    assert first.input_files == len(files)
    landed = [f"{locations.landing}/{name}" for name in files]
    taken = CheckpointLog.of(locations).source_log(0, locations.landing).taken_in(landed)
    assert sorted(taken) == sorted(landed)
    assert pending_input(pipeline, RunRequest(pipeline.name, locations)).nothing_new
    land_in_order(locations.landing, {f"{where[-1]}/later.json": [event("u2", "2023-07-30T10:30:00Z")]})
    assert run_pipeline(spark, pipeline, locations).input_files == 1


def test_a_run_under_a_root_named_like_a_pattern_takes_every_file(spark, tmp_path):
    """Root 'lake [prod] {a,b}': before, the run took 0 files and exited 0, and never would."""
    root = tmp_path / "lake [prod] {a,b}"
    pipeline = declare.load("clickstream")
    locations = Locations.resolve(pipeline.name, root=str(root))
    files = {
        f"part [{i}] {{x,y}}.json": [event(f"u{j % 2}", f"2023-07-30T10:{3 * i + j:02d}:00Z") for j in range(3)]
        for i in range(5)
    }
    land_in_order(locations.landing, files)
    report = run_pipeline(spark, pipeline, locations)
    model = ClickstreamModel()
    model.run([all_lines(files)])
    assert (report.input_files, report.input_rows) == (5, 15)
    assert table_rows(spark, locations.output) == model.rows()


def test_a_backfill_reads_exactly_its_range_beside_a_folder_named_like_a_pattern(spark, tmp_path):
    """A producer's folder 'dt=2023-07-30,*': before, a backfill of 07-30..31 read 07-29 too."""
    from tests.integration.test_backfill import published_rows, run_backfill

    landing = tmp_path / "landing" / "clickstream"
    days = {
        "dt=2023-07-29": {"a.json": [event("u0", "2023-07-29T10:00:00Z")]},
        "dt=2023-07-30": {"b.json": [event("u1", "2023-07-30T10:00:00Z")]},
        "dt=2023-07-31": {"c.json": [event("u2", "2023-07-31T10:00:00Z")]},
        "dt=2023-07-30,*": {"d.json": [event("u3", "2023-07-30T10:01:00Z")]},
    }
    for folder, files in days.items():
        land_in_order(str(landing / folder), files)
    request = backfill_request(
        {"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-31"},
        root=str(tmp_path),
        allowed_roots=[str(tmp_path)],
        backfill_id="bf-names",
    )
    assert any("'dt=2023-07-30,*'" in warning for warning in request.warnings)  # named, never read
    run_backfill(spark, request)
    publish(request)
    model = ClickstreamModel()
    model.run([all_lines(days["dt=2023-07-30"]) + all_lines(days["dt=2023-07-31"])])
    assert published_rows(spark, request.publish_to) == model.closed_range_rows()
