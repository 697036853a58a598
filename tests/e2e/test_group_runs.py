"""Several pipelines in one Spark application (`python -m jobs run A B C`), a run with
nothing new that starts no Spark, and the JVM class archive's fallback: real processes,
each result against the independent model (tests/model.py) or a separate run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from demo import samples
from jobs import declare, jvm
from jobs.lake.layout import Locations
from jobs.lake.locks import checkpoint_lock
from jobs.run.report import load_reports
from jobs.validate.result import load_results
from tests.helpers import REPO, all_lines, assert_run_matches, event, land, python_cmd, run_pipeline
from tests.histories import BEFORE_RUN, USERS, USERS_LATER, History, Run, assert_history_matches, table
from tests.model import (
    AdJoinModel,
    EventsModel,
    GithubActivityModel,
    RackAlertsModel,
    RackTemperaturesModel,
    RuleBook,
    SpendingSessionsModel,
    enriched_row,
)

# One pipeline of each pattern: events (enriched), window (nested events), process, join.
GROUP = ["clickstream_enriched", "github_activity", "rack_alerts", "ad_clicks"]
ARRIVALS = 3


def cli(*args: str, env: dict | None = None, as_a_user: bool = False) -> subprocess.CompletedProcess:
    """`python -m jobs ...`; `as_a_user`: without the test suite's own JVM options."""
    base = {k: v for k, v in os.environ.items() if not (as_a_user and k == "JAVA_TOOL_OPTIONS")}
    return subprocess.run(
        python_cmd(*args), cwd=REPO, capture_output=True, text=True, timeout=600, env={**base, **(env or {})}
    )


def _prepare(root: str, name: str, number: int) -> Locations:
    locations = Locations.resolve(name, root=root)
    BEFORE_RUN.get(name, lambda *_: None)(locations, number)
    land(locations.landing, samples.arrivals(name)[number - 1])
    return locations


@pytest.fixture(scope="module")
def group_runs(spark, tmp_path_factory):
    """The group through three arrivals, one application per arrival; the same pipelines
    run separately, in this process, on another root."""
    together, apart = (str(tmp_path_factory.mktemp(key)) for key in ("together", "apart"))
    histories = {name: History(declare.load(name), Locations.resolve(name, root=together)) for name in GROUP}
    separate = {}
    outputs = []
    for number in range(1, ARRIVALS + 1):
        for name in GROUP:
            _prepare(together, name, number)
            locations = _prepare(apart, name, number)
            run_pipeline(spark, declare.load(name), locations)
            separate[name] = table(spark, declare.load(name), locations)
        # The last arrival's runs send their lineage too (jobs/run/lineage.py), to a file.
        lineage = {
            "OPENLINEAGE__TRANSPORT__TYPE": "file",
            "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(Path(together) / "lineage.jsonl"),
            "OPENLINEAGE__TRANSPORT__APPEND": "true",
        }
        process = cli("run", *GROUP, "--root", together, env=lineage if number == ARRIVALS else None)
        outputs.append(process)
        assert process.returncode == 0, f"arrival {number}: {process.stdout}{process.stderr}"
        for history in histories.values():
            report = load_reports(history.locations.runs)[-1]
            verdicts = {r.validation_id: r.status for r in load_results(history.locations.runs)}
            history.runs.append(
                Run(report, verdicts.get(report.run_id), table(spark, history.pipeline, history.locations))
            )
    return histories, separate, outputs


def test_a_group_of_four_patterns_matches_the_model_and_the_separate_runs(group_runs):
    histories, separate, outputs = group_runs
    users: dict[str, tuple[str, str]] = {}
    models = {
        "clickstream_enriched": EventsModel(
            lambda line: enriched_row(line, users), RuleBook.of("clickstream_enriched")
        ),
        "github_activity": GithubActivityModel(),
        "rack_alerts": RackAlertsModel(),
        "ad_clicks": AdJoinModel(outer=False),
    }
    for name in GROUP:
        arrivals = samples.arrivals(name)[:ARRIVALS]
        before = (lambda n: users.update(USERS if n < 3 else USERS_LATER)) if name == "clickstream_enriched" else None
        assert_history_matches(histories[name], models[name], arrivals, before or (lambda n: None))
        assert histories[name].runs[-1].table == separate[name], name

    # One application: every member's Spark log is the group's; one summary line per member.
    logs = {history.runs[-1].report.spark_log for history in histories.values()}
    assert len(logs) == 1 and logs.pop().endswith("jobs-group.log")
    summary = outputs[-1].stdout.split(f"{len(GROUP)} pipelines, exit 0:")[1].strip().splitlines()
    assert [line.split(":")[0].strip() for line in summary] == GROUP
    assert all(", exit 0" in line and "succeeded" in line for line in summary)
    # The runs' own lines, interleaved, each name their pipeline.
    assert "clickstream_enriched: lock:" in outputs[-1].stdout


def test_each_member_of_a_group_sends_its_own_lineage(group_runs):
    histories, _, _ = group_runs
    root = Path(histories[GROUP[0]].locations.landing).parents[1]
    sent = [json.loads(line) for line in (root / "lineage.jsonl").read_text().splitlines()]
    for name, history in histories.items():
        start, end = [e for e in sent if e["job"]["name"] == name]
        report = history.runs[-1].report
        assert (start["eventType"], end["eventType"]) == ("START", "COMPLETE")
        assert start["run"]["runId"] == end["run"]["runId"]
        account = end["run"]["facets"]["triggerOnce_account"]
        assert (account["runId"], account["inputRows"], account["outputRows"]) == (
            report.run_id,
            report.input_rows,
            report.output_rows,
        )
        inputs = sorted(i["name"] for i in end["inputs"])
        pipeline, locations = history.pipeline, history.locations
        landings = (
            [locations.landing]
            if len(pipeline.sources) == 1
            else [f"{locations.landing}/{s.name}" for s in pipeline.sources]
        )
        dimension = [f"{locations.dimensions}/{pipeline.enrich.path}"] if pipeline.enrich else []
        assert inputs == sorted(landings + dimension)
        assert [o["name"] for o in end["outputs"]] == [locations.output]


def test_a_refused_and_a_failing_member_leave_the_others_exact(tmp_path):
    """device_steps' lock is taken (refused, exit 3); clickstream meets a record its `fail`
    rule stops on (exit 5); spending_sessions and rack_temperatures run as if alone."""
    root = str(tmp_path)
    names = ["clickstream", "device_steps", "spending_sessions", "rack_temperatures"]
    for name in names:
        _prepare(root, name, 1)
    clickstream = Locations.resolve("clickstream", root=root)
    land(clickstream.landing, {"load.json": [event("loadtest-7", "2023-07-30T10:00:00Z", "lt-1")]})
    steps = Locations.resolve("device_steps", root=root)

    with checkpoint_lock(steps.ledger, "device_steps"):
        process = cli("run", *names, "--root", root)

    assert process.returncode == 5, process.stdout + process.stderr
    summary = dict(
        line.strip().split(": ", 1) for line in process.stdout.split("4 pipelines, exit 5:")[1].strip().splitlines()
    )
    assert summary["device_steps"].startswith("refused, exit 3: ")
    assert "is already running on checkpoint" in summary["device_steps"]
    assert summary["clickstream"].startswith("failed, exit 5: ")
    assert "no_load_test_traffic" in summary["clickstream"]
    assert load_reports(steps.runs)[-1].status == "refused"
    assert not load_reports(clickstream.runs)[-1].batch_ids  # nothing of its batch is committed
    for name, model in (("spending_sessions", SpendingSessionsModel()), ("rack_temperatures", RackTemperaturesModel())):
        assert summary[name].startswith("succeeded") and summary[name].endswith("exit 0")
        report = load_reports(Locations.resolve(name, root=root).runs)[-1]
        assert_run_matches(report, model.run([all_lines(samples.arrivals(name)[0])]))


def test_a_run_with_nothing_new_starts_no_spark(tmp_path):
    root = str(tmp_path)
    names = ["clickstream", "rack_temperatures"]
    for name in names:
        _prepare(root, name, 1)
    assert cli("run", *names, "--root", root).returncode == 0
    before = {name: load_reports(Locations.resolve(name, root=root).runs)[-1] for name in names}

    # A master Spark cannot parse: had a session been started, the runs would fail.
    alone = cli("run", "clickstream", "--root", root, env={"SPARK_MASTER": "nope"})
    together = cli("run", *names, "--root", root, env={"SPARK_MASTER": "nope"})

    assert alone.returncode == 0 and together.returncode == 0, alone.stderr + together.stdout + together.stderr
    assert "nothing new landed; Spark is not started" in alone.stdout
    for name in names:
        report = load_reports(Locations.resolve(name, root=root).runs)[-1]
        assert (report.status, report.batches, report.output_rows) == ("succeeded", 0, 0)
        assert (report.watermark, report.state_rows) == (before[name].watermark, before[name].state_rows)


def test_a_missing_or_stale_class_archive_starts_normally_with_one_line(tmp_path):
    root, cache = str(tmp_path / "root"), tmp_path / "cache"
    _prepare(root, "clickstream", 1)
    env = {"JOBS_CACHE_DIR": str(cache)}

    missing = cli("run", "clickstream", "--root", root, "--no-validate", env=env, as_a_user=True)
    assert missing.returncode == 0, missing.stderr
    lines = [line for line in missing.stdout.splitlines() if "JVM class archive" in line]
    assert lines == [
        "JVM class archive: none was made; starting without it (about 4 s slower). Make it: python -m jobs jvm-archive"
    ]

    (cache / "jvm").mkdir(parents=True)
    (cache / "jvm" / "spark-0.0.0-0123456789ab.jsa").write_bytes(b"an archive of another JDK")
    _prepare(root, "clickstream", 2)
    stale = cli("run", "clickstream", "--root", root, "--no-validate", env=env, as_a_user=True)
    assert stale.returncode == 0, stale.stderr
    assert [line for line in stale.stdout.splitlines() if "JVM class archive" in line] == [
        f"JVM class archive: the one in {(cache / 'jvm').resolve()} (spark-0.0.0-0123456789ab.jsa) was made for "
        "another JDK, Spark or Delta; starting without it (about 4 s slower). Make it: python -m jobs jvm-archive"
    ]
    reports = load_reports(Locations.resolve("clickstream", root=root).runs)
    assert [r.status for r in reports] == ["succeeded", "succeeded"] and reports[-1].batch_ids


def _class_sources(root: str, pipeline: str, log: Path) -> dict[str, str]:
    """Class -> where the driver's JVM of a run of `pipeline` loaded it from (lambdas left
    out: the JVM makes them as it runs, from an archive or not)."""
    _prepare(root, pipeline, 1)
    options = f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} -Xlog:class+load=info:file={log}"
    result = cli("run", pipeline, "--root", root, "--no-validate", env={"JAVA_TOOL_OPTIONS": options})
    assert result.returncode == 0, result.stderr
    sources = {}
    for line in log.read_text().splitlines():  # [0.1s][info][class,load] <class> source: <where>
        name, _, source = line.split("] ", 1)[-1].partition(" source: ")
        if "$$Lambda" not in name:
            sources[name] = source
    return sources


def test_delta_s_classes_are_mapped_from_the_class_archive_and_parquet_runs_still_map_it(tmp_path):
    """Delta's jars follow Spark's on every driver's class path, and the archive is made with
    a Delta table written: a Delta run maps Delta's classes, not loads them from its jars;
    a Parquet run, whose class path has Delta's jars too, maps Spark's."""
    delta = _class_sources(str(tmp_path / "delta"), "rack_temperatures", tmp_path / "delta.log")
    parquet = _class_sources(str(tmp_path / "parquet"), "clickstream", tmp_path / "parquet.log")

    delta_classes = [name for name in delta if name.startswith("org.apache.spark.sql.delta.")]
    assert len(delta_classes) > 300, len(delta_classes)
    from_jars = [name for name in delta_classes if "shared objects file" not in delta[name]]
    assert len(from_jars) < len(delta_classes) / 10, from_jars[:5]
    assert "shared objects file" in delta["org.apache.spark.sql.delta.DeltaLog"]
    spark_classes = [name for name in parquet if name.startswith("org.apache.spark.sql.")]
    assert sum("shared objects file" in parquet[name] for name in spark_classes) > 0.9 * len(spark_classes)


def test_a_damaged_archive_of_the_right_name_is_passed_over_by_the_jvm(tmp_path):
    """The JVM checks the archive itself: one it cannot map costs the start only."""
    root, cache = str(tmp_path / "root"), tmp_path / "cache"
    _prepare(root, "clickstream", 1)
    env = {"JOBS_CACHE_DIR": str(cache)}
    script = "from jobs import jvm; print(jvm.archive_path())"
    path = subprocess.run(
        [python_cmd()[0], "-c", script], cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, check=True
    ).stdout.strip()
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as damaged:
        damaged.write(b"\0" * 4096)

    result = cli("run", "clickstream", "--root", root, "--no-validate", env=env, as_a_user=True)

    assert result.returncode == 0, result.stderr
    assert "JVM class archive" not in result.stdout
    assert load_reports(Locations.resolve("clickstream", root=root).runs)[-1].input_rows > 0


def test_lean_start_only_for_small_increments():
    assert "TieredStopAtLevel=1" in jvm.start_options(jvm.LEAN_BYTES)
    assert "TieredStopAtLevel" not in jvm.start_options(jvm.LEAN_BYTES + 1)
    assert "TieredStopAtLevel" not in jvm.start_options(None)  # unknown: the JVM's defaults
