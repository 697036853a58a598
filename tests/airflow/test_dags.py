"""The dags folder parses quickly, without errors or heavy imports, into the DAGs the
declarations describe."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from jobs import declare
from jobs.flow.patterns import pattern_of
from tests.airflow.dag_runs import airflow_env
from tests.helpers import REPO, declaration_copy

# Loads the dags folder the way Airflow's DAG processor does, then describes what it found.
DESCRIBE = r"""
import json, sys, time
from airflow.dag_processing.dagbag import DagBag
import airflow.providers.apache.spark.operators.spark_submit  # Airflow's own cost, not the DAGs'
before = set(sys.modules)
started = time.monotonic()
bag = DagBag(dag_folder=sys.argv[1])
parse_s = time.monotonic() - started
heavy = sorted({m.split(".")[0] for m in set(sys.modules) - before} & {"pyspark", "great_expectations", "boto3", "pandas", "pyarrow"})
dags = {}
for dag in bag.dags.values():
    dags[dag.dag_id] = {
        "tasks": {t.task_id: {"type": type(t).__name__, "upstream": sorted(t.upstream_task_ids),
                              "retries": t.retries, "retry_delay_s": t.retry_delay.total_seconds(),
                              "backoff": t.retry_exponential_backoff,
                              "timeout_s": t.execution_timeout.total_seconds() if t.execution_timeout else None,
                              "trigger_rule": getattr(t.trigger_rule, "value", t.trigger_rule),
                              "outlets": [getattr(o, "uri", None) or f"alias:{o.name}" for o in t.outlets],
                              "conn_id": getattr(t, "spark_conn_id", None),
                              "conf": getattr(t, "conf", None)} for t in dag.tasks},
        "timetable": type(dag.timetable).__name__,
        "summary": getattr(dag.timetable, "expression", None) or getattr(getattr(dag.timetable, "timetable", None), "expression", None),
        "assets": [a.uri for a in dag.timetable.asset_condition.objects] if hasattr(dag.timetable, "timetable") else [],
        "catchup": dag.catchup, "max_active_runs": dag.max_active_runs,
        "paused_upon_creation": dag.is_paused_upon_creation,
        "params": {k: v.schema for k, v in dag.params.items()},
        "deadlines": [(type(d.reference).__name__, d.interval.total_seconds(), d.callback.path) for d in dag.deadline or []],
    }
print(json.dumps({"errors": bag.import_errors, "parse_s": parse_s, "heavy": heavy, "dags": dags}, default=str))
"""


def describe_dags(home, **env) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", DESCRIBE, str(REPO / "dags")],
        env={**airflow_env(home, str(home / "root")), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return {**json.loads(result.stdout.strip().splitlines()[-1]), "root": str(home / "root")}


@pytest.fixture(scope="module")
def dagbag(tmp_path_factory) -> dict:
    return describe_dags(tmp_path_factory.mktemp("airflow_parse"))


def test_the_dags_folder_imports_without_errors_quickly_and_without_heavy_imports(dagbag):
    assert dagbag["errors"] == {}
    assert dagbag["heavy"] == [], "DAG files must not import Spark, Great Expectations, boto3 or pandas"
    # benchmarks/dag_parse.py prints the figures; this bound only catches a regression by an
    # order of magnitude (Airflow's own dagbag_import_timeout is 30 s).
    print(f"dags folder parsed in {dagbag['parse_s']:.3f}s")
    assert dagbag["parse_s"] < 10


def test_one_dag_per_declared_pipeline_with_its_schedule_and_settings(dagbag):
    pipelines = declare.load_all()
    expected_ids = {f"jobs_{name}" for name in pipelines} | {
        "jobs_backfill",
        "jobs_data_quality",
        "jobs_maintenance",
        "jobs_rebuild",
    }
    assert set(dagbag["dags"]) == expected_ids
    assert [name for name, spec in pipelines.items() if spec.schedule == "on_arrival"] == ["rack_alerts"]
    for name, spec in pipelines.items():
        dag = dagbag["dags"][f"jobs_{name}"]
        if spec.schedule == "on_arrival":  # its landing's watcher, or its clock (the test below)
            assert dag["timetable"] == "AssetOrTimeSchedule"
        else:
            assert dag["timetable"] == "CronTriggerTimetable" and spec.schedule == "@hourly"
            assert dag["summary"] in ("@hourly", "0 * * * *")
        assert dag["catchup"] is False and dag["max_active_runs"] == 1
        tasks = dag["tasks"]
        assert {t: v["type"] for t, v in tasks.items()} == {
            "run": "RunPipelineOperator",
            "validate": "_PythonDecoratedOperator",  # the verdict of the run's validation, made in its application
            "run_report": "_PythonDecoratedOperator",
            "table_updated": "_PythonDecoratedOperator",
        }
        assert tasks["validate"]["upstream"] == ["run"]
        assert tasks["run_report"]["upstream"] == ["run", "validate"]  # after validate; the run id from run
        assert tasks["run_report"]["trigger_rule"] == "none_failed"  # also when validate skipped: nothing new
        assert tasks["table_updated"]["upstream"] == ["run_report"]
        assert tasks["run"]["conn_id"] == "spark_default"
        assert tasks["validate"]["retries"] == 0  # a verdict read again reads the same
        for task in (t for task_id, t in tasks.items() if task_id != "validate"):
            assert task["retries"] == spec.orchestration.retries == 2
            assert task["backoff"] == 2.0  # each retry waits twice as long as the one before
            assert task["timeout_s"] == spec.orchestration.timeout_s == timedelta(hours=1).total_seconds()
        # No deadline unless declared (then: tests/airflow/test_cascade.py): `airflow dags test`
        # fails on a DAG with one (apache/airflow#73428).
        assert dag["deadlines"] == []
        # The output table is the Asset the run updates (JOBS_ROOT decides where it is).
        assert tasks["table_updated"]["outlets"] == [f"file://{dagbag['root']}/tables/{name}"]
        assert tasks["run_report"]["outlets"] == []
        assert set(dag["params"]) == {
            "max_files_per_trigger",
            "max_bytes_per_trigger",
            "quarantine_file",
            "quarantine_reason",
        }


def test_the_backfill_and_data_quality_dags(dagbag):
    backfill = dagbag["dags"]["jobs_backfill"]
    assert backfill["timetable"] == "NullTimetable" and backfill["max_active_runs"] == 1
    assert {t: v["upstream"] for t, v in backfill["tasks"].items()} == {
        "check_params": [],
        "reprocess": ["check_params"],
        "validate": ["reprocess"],
        "publish_backfill": ["check_params", "validate"],
        "replace": ["validate"],
    }
    assert backfill["tasks"]["check_params"]["retries"] == 0  # bad params do not get better
    assert backfill["paused_upon_creation"] is False  # a trigger runs at once (README's CLI example)
    assert backfill["tasks"]["publish_backfill"]["outlets"] == ["alias:jobs-published"]  # the location is a param
    backfillable = sorted(n for n, p in declare.load_all().items() if pattern_of(p).backfill_refusal is None)
    # Suggested, not enforced: check_params refuses the others with a reason (test_backfill_dag_runs).
    assert "enum" not in backfill["params"]["pipeline"]
    assert (
        backfill["params"]["pipeline"]["examples"]
        == backfillable
        == sorted(n for n, p in declare.load_all().items() if p.pattern in ("window", "events"))
    )
    assert set(backfill["params"]) == {"pipeline", "since", "until", "prefixes", "publish_to", "max_files_per_trigger"}

    quality = dagbag["dags"]["jobs_data_quality"]
    # Hourly: a shipped table may not go two hours without rows (its schedule's twice).
    assert quality["timetable"] == "AssetOrTimeSchedule" and quality["summary"] in ("@hourly", "0 * * * *")
    assert sorted(a.rsplit("/", 1)[-1] for a in quality["assets"]) == sorted(declare.load_all())
    tasks = quality["tasks"]
    assert quality["params"]["revalidate"]["type"] == "boolean"  # default: only tables rows were appended to
    assert tasks["data_docs"]["trigger_rule"] == "all_done"
    assert tasks["verdict"]["trigger_rule"] == "none_failed"
    assert set(tasks["verdict"]["upstream"]) == {"data_docs", *(f"validate_{n}" for n in declare.load_all())}
    assert tasks["freshness"]["upstream"] == [] and tasks["freshness"]["trigger_rule"] == "all_done"


def test_the_maintenance_dag_keeps_each_delta_table(dagbag):
    maintenance = dagbag["dags"]["jobs_maintenance"]
    assert maintenance["timetable"] == "CronTriggerTimetable" and maintenance["summary"] in ("@daily", "0 0 * * *")
    delta = sorted(n for n, p in declare.load_all().items() if p.output.format == "delta")
    assert delta == ["ad_clicks", "clickstream_enriched", "rack_alerts", "rack_temperatures"]
    assert sorted(maintenance["tasks"]) == [f"maintain_{n}" for n in delta]
    assert all(t["type"] == "JobsSubmitOperator" for t in maintenance["tasks"].values())


def test_a_declarations_spark_sizes_reach_its_spark_submit(tmp_path):
    sizes = {"driver_memory": "3g", "state_store": "rocksdb", "max_bytes_per_trigger": "256m"}
    pipelines = declaration_copy(tmp_path / "pipelines", "clickstream", spark=sizes)
    dags = describe_dags(tmp_path, JOBS_PIPELINES_DIR=str(pipelines))["dags"]
    tasks = dags["jobs_clickstream"]["tasks"]
    for task in ("run",):  # validated in the run's own application
        conf = tasks[task]["conf"]
        assert conf["spark.driver.memory"] == "3072m"
        assert conf["spark.sql.streaming.stateStore.providerClass"].endswith("RocksDBStateStoreProvider")
        assert "-XX:+ExitOnOutOfMemoryError" in conf["spark.driver.extraJavaOptions"]


def _shipped_declarations(folder):
    """Every shipped declaration, copied into `folder` (for JOBS_PIPELINES_DIR)."""
    import shutil

    from jobs.declare.load import pipelines_dir

    folder.mkdir(parents=True, exist_ok=True)
    for declaration in pipelines_dir().iterdir():
        if declaration.name.endswith(".yaml"):
            shutil.copy(str(declaration), folder / declaration.name)
    return folder


@pytest.mark.parametrize(
    ("broken", "mistake", "says"),
    [
        ("device_steps", "name: device_steps\nsource: [unclosed\n", "not valid YAML"),
        ("clickstream", {"schedule": "every tuesday"}, "is not a schedule Airflow reads"),
    ],
    ids=["yaml", "schedule"],
)
def test_one_declaration_that_does_not_load_costs_only_its_own_dag(tmp_path, broken, mistake, says):
    import yaml

    folder = _shipped_declarations(tmp_path / "pipelines")
    if isinstance(mistake, str):
        (folder / f"{broken}.yaml").write_text(mistake)
    else:
        raw = yaml.safe_load((folder / f"{broken}.yaml").read_text())
        (folder / f"{broken}.yaml").write_text(yaml.safe_dump({**raw, **mistake}))
    found = describe_dags(tmp_path, JOBS_PIPELINES_DIR=str(folder))
    shipped = declare.load_all()
    # Every other DAG is built as it would be without the mistake ...
    assert set(found["dags"]) == {f"jobs_{n}" for n in shipped} | {
        "jobs_backfill",
        "jobs_data_quality",
        "jobs_maintenance",
        "jobs_rebuild",
    }
    for name in set(shipped) - {broken}:
        assert set(found["dags"][f"jobs_{name}"]["tasks"]) == {"run", "validate", "run_report", "table_updated"}
    quality = found["dags"]["jobs_data_quality"]["tasks"]
    assert set(quality) - {"data_docs", "verdict", "freshness"} == {f"validate_{n}" for n in set(shipped) - {broken}}
    # ... the broken one's own DAG fails with why, when run ...
    own = found["dags"][f"jobs_{broken}"]
    assert set(own["tasks"]) == {"declaration"} and own["timetable"] == "NullTimetable"
    # ... and Airflow lists one import error, from a file that builds no DAG, naming the file.
    ((where, error),) = found["errors"].items()
    assert where.endswith("jobs_declarations.py") and f"{broken}" in error and says in error


@pytest.mark.parametrize(
    "schedule",
    [
        *("@hourly", "@midnight", "@once", "@continuous", "*/15 * * * *", "0 0 31 2 *", "0 0 * * * 30"),
        *("every tuesday", "61 * * * *", "* * * * * * * *", "@fortnightly", ""),
    ],
)
def test_a_schedule_loads_exactly_when_airflow_takes_it(schedule):
    import yaml
    from airflow.sdk import DAG

    from jobs.declare.load import pipelines_dir
    from jobs.orchestration.factory import START_DATE

    try:
        # As the factory builds a pipeline's DAG: one run at a time (what @continuous needs too).
        probe = DAG(
            "probe", schedule=schedule, start_date=START_DATE, catchup=False, max_active_runs=1, auto_register=False
        )
        probe.validate()
        airflow_takes = True
    except Exception:  # noqa: BLE001 - whatever Airflow refuses it with
        airflow_takes = False
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    try:
        declare.from_mapping({**raw, "schedule": schedule})
        loads = True
    except declare.DeclarationError as error:
        assert "schedule" in str(error)
        loads = False
    assert loads == airflow_takes


def test_a_dag_on_arrival_is_scheduled_on_its_landing_s_watcher_or_its_clock(tmp_path):
    import yaml

    from jobs.declare.load import pipelines_dir
    from jobs.orchestration.arrival_watcher import LandingArrivals
    from jobs.orchestration.factory import pipeline_dag

    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    pipeline = declare.from_mapping({**raw, "schedule": "on_arrival", "on_arrival": {"quiet_period": "1 minute"}})
    timetable = pipeline_dag(pipeline, str(tmp_path)).timetable
    assert type(timetable).__name__ == "AssetOrTimeSchedule" and timetable.timetable.delta.total_seconds() == 3600
    (landing,) = timetable.asset_condition.objects
    assert landing.uri == f"file://{tmp_path}/landing/clickstream"
    (watcher,) = landing.watchers
    assert isinstance(watcher.trigger, LandingArrivals)
    assert watcher.trigger.serialize()[1] == {
        "pipeline_name": "clickstream",
        "root": str(tmp_path),
        "quiet_period_s": 60,
        "listing_every_s": 10,
        "queue": None,
    }
    with pytest.raises(declare.DeclarationError, match="an on_arrival block is for `schedule: on_arrival`"):
        declare.from_mapping({**raw, "on_arrival": {"quiet_period": "1 minute"}})


def test_a_group_on_arrival_watches_each_member_s_landing_and_runs_them_all(tmp_path):
    from jobs.orchestration.arrival_watcher import LandingArrivals
    from jobs.orchestration.group_dags import group_dag

    quick = {"quiet_period": "10 seconds", "at_least_every": "20 minutes"}
    folder = tmp_path / "pipelines"
    declaration_copy(folder, "rack_alerts", group="racks")  # shipped on arrival: 30 s quiet, at least hourly
    declaration_copy(folder, "rack_temperatures", group="racks", schedule="on_arrival", on_arrival=quick)
    members = [declare.load(name, folder) for name in ("rack_alerts", "rack_temperatures")]
    timetable = group_dag("racks", members, str(tmp_path)).timetable
    assert type(timetable).__name__ == "AssetOrTimeSchedule"
    assert timetable.timetable.delta.total_seconds() == 20 * 60  # the shortest clock of the members
    landings = timetable.asset_condition.objects
    assert [landing.uri for landing in landings] == [
        f"file://{tmp_path}/landing/rack_alerts",
        f"file://{tmp_path}/landing/rack_temperatures",
    ]
    watched = [(w.trigger.pipeline_name, w.trigger.quiet_period_s) for landing in landings for w in landing.watchers]
    assert watched == [("rack_alerts", 30), ("rack_temperatures", 10)]  # each as its declaration says
    assert all(isinstance(w.trigger, LandingArrivals) for landing in landings for w in landing.watchers)
    dags = describe_dags(tmp_path, JOBS_PIPELINES_DIR=str(folder))["dags"]
    assert dags["jobs_group_racks"]["timetable"] == "AssetOrTimeSchedule"
    assert dags["jobs_rack_alerts"]["timetable"] == dags["jobs_rack_temperatures"]["timetable"] == "NullTimetable"

    declaration_copy(folder, "clickstream", group="racks")  # @hourly: not one schedule (tests/unit/test_groups.py)
    found = describe_dags(tmp_path, JOBS_PIPELINES_DIR=str(folder))
    assert set(found["dags"]["jobs_group_racks"]["tasks"]) == {"declaration"}  # a DAG that fails with why


def test_a_group_dag_takes_its_members_largest_memory_and_most_retries(tmp_path):
    folder = tmp_path / "pipelines"
    declaration_copy(folder, "clickstream", group="pair", spark={"driver_memory": "4g"}, airflow={"retries": 4})
    declaration_copy(
        folder, "device_steps", group="pair", spark={"driver_memory": "1g"}, airflow={"timeout": "3 hours"}
    )
    dags = describe_dags(tmp_path, JOBS_PIPELINES_DIR=str(folder))["dags"]
    run = dags["jobs_group_pair"]["tasks"]["run"]
    assert run["conf"]["spark.driver.memory"] == "4096m"  # not the last member's 1g
    assert run["retries"] == 4 and run["timeout_s"] == 3 * 3600  # each member gets at least its own
    # The command line's group takes the same, from the same function.
    from jobs.declare.groups import group_orchestration, group_spark_conf

    members = [declare.load(name, folder) for name in ("clickstream", "device_steps")]
    assert group_spark_conf(members)["spark.driver.memory"] == "4096m"
    assert group_spark_conf(members[::-1])["spark.driver.memory"] == "4096m"
    assert (group_orchestration(members).retries, group_orchestration(members).timeout_s) == (4, 3 * 3600)


def test_retries_of_a_dag_on_s3_outlast_the_checkpoint_lease():
    from jobs.orchestration.retries import outlasting_delay

    # Defaults (2 retries, 60 s doubled): the last retry comes after at least 180 s, past a 120 s lease.
    assert outlasting_delay(60, 2, 1800, 120) == 60
    # One retry after a 300 s lease: its delay grows past the lease.
    assert outlasting_delay(60, 1, 1800, 300) == 315
    # Three retries, 10 s apart at first (10 + 20 + 40 = 70 s): raised until they outlast 120 s.
    delay = outlasting_delay(10, 3, 1800, 120)
    assert delay + 2 * delay + 4 * delay > 120 and delay == 25
    assert outlasting_delay(60, 0, 1800, 300) == 60  # no retry, nothing to outlast


@pytest.mark.parametrize(
    ("master", "executors_python"), [("local[2]", sys.executable), ("spark://127.0.0.1:7077", "python3")]
)
def test_a_tasks_spark_submit_runs_the_executors_python_its_master_calls_for(monkeypatch, master, executors_python):
    """The driver is the Airflow worker's interpreter; on a cluster the executors run the
    nodes' own python3, since a path on the Airflow worker means nothing on a node."""
    import logging
    import os

    from jobs.orchestration import environment

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", json.dumps({"conn_type": "spark", "host": master}))
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert environment.spark_master("spark_test") == master
    with environment.task_environment(logging.getLogger("test"), "spark_test"):
        assert (os.environ["PYSPARK_DRIVER_PYTHON"], os.environ["PYSPARK_PYTHON"]) == (sys.executable, executors_python)
    assert "PYSPARK_PYTHON" not in os.environ


def test_a_reader_on_upstream_is_scheduled_on_the_table_it_reads(tmp_path, monkeypatch):
    """`schedule: on_upstream`: the reader's DAG runs on its upstream's table Asset, the one the
    upstream's DAG updates when a run appended rows (its `table_updated` task's outlet)."""
    import yaml

    from jobs.orchestration.factory import pipeline_dag

    folder = tmp_path / "pipelines"
    from jobs.declare.load import pipelines_dir

    folder.mkdir()
    raw = yaml.safe_load((pipelines_dir() / "device_steps.yaml").read_text())
    (folder / "device_steps.yaml").write_text(yaml.safe_dump(raw))
    reader = {"name": "steps_per_hour", "source": {"table": "device_steps"}, "schedule": "on_upstream", "output": {}}
    (folder / "steps_per_hour.yaml").write_text(yaml.safe_dump(reader))
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder))
    upstream, pipeline = declare.load("device_steps", folder), declare.load("steps_per_hour", folder)
    (asset,) = pipeline_dag(pipeline, str(tmp_path)).timetable.asset_condition.objects
    updated = pipeline_dag(upstream, str(tmp_path)).get_task("table_updated")
    assert asset.uri == f"file://{tmp_path}/tables/device_steps" == updated.outlets[0].uri
    with pytest.raises(
        declare.DeclarationError, match="schedule on_upstream runs a reader of another pipeline's table"
    ):
        declare.from_mapping({**raw, "schedule": "on_upstream"})


def test_the_rebuild_dag_rebuilds_and_rolls_back_the_chain_with_with_downstream():
    from types import SimpleNamespace

    from jobs.orchestration.rebuild_dag import RebuildOperator

    operator = RebuildOperator(task_id="rebuild", root="/lake", name="jobs-rebuild")
    run = SimpleNamespace(run_id="manual__1", run_after=datetime(2026, 11, 29, tzinfo=UTC))
    chain = {"pipeline": "raw_events", "with_downstream": True}
    args = operator.arguments({"params": chain, "dag_run": run})
    assert args[:4] == ["rebuild", "raw_events", "--root=/lake", "--with-downstream"] and args[4].startswith("--id=")
    back = operator.arguments({"params": {**chain, "rollback": True}, "dag_run": run})
    assert back == ["rebuild", "raw_events", "--root=/lake", "--with-downstream", "--rollback"]
