"""One application (jobs/run/application.py): for the same run requests, the session a
command or a group starts in this process and the spark-submit an Airflow task starts get the
same settings, decided in one place."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from jobs import jvm
from jobs.lake.builds import in_use
from jobs.request import RunRequest
from tests.helpers import declaration_copy, event, land

NAMES = ["clickstream", "rack_temperatures"]  # a Parquet table and a Delta one


class Started(Exception):
    """What the in-process session was about to start with."""


def test_a_group_s_application_is_the_same_in_process_and_under_spark_submit(tmp_path, s3_root, monkeypatch):
    """A bucket among the locations (s3a's settings), a Delta table (Delta's), memory declared
    by one member: spark-submit's settings equal the in-process session's, and its JVM options
    hold the same start (the class archive, the lean start for so many new bytes). Before, the
    task decided S3 by searching its arguments for 's3a://' and the group by its locations."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from jobs import session
    from jobs.launch import execute_group
    from jobs.orchestration.run_operators import GroupRunOperator

    folder = declaration_copy(tmp_path / "pipelines", "clickstream", spark={"driver_memory": "3g"})
    declaration_copy(folder, "rack_temperatures")
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", json.dumps({"conn_type": "aws"}))
    land(in_use("clickstream", s3_root).landing, {"a.json": [event("u1", "2023-07-30T10:00:00Z")]})
    rack = json.dumps({"rack": "r1", "temperature": 20.5, "ts": "2023-07-30T10:00:00Z"})
    land(in_use("rack_temperatures", s3_root).landing, {"a.json": [rack]})

    started = {}

    def start(name, conf, *, new_bytes=None):
        started.update(conf=conf, new_bytes=new_bytes)
        raise Started

    monkeypatch.setattr(session, "get_spark", start)
    with pytest.raises(Started):
        list(execute_group([RunRequest(name, in_use(name, s3_root)) for name in NAMES]))

    submitted = {}
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: submitted.update(conf=dict(self.conf)))
    task = GroupRunOperator(task_id="run", pipeline_names=NAMES, root=s3_root, name="jobs-group-pair")
    ti = SimpleNamespace(
        log_url="http://airflow/log", dag_id="jobs_group_pair", run_id="manual", task_id="run", try_number=1
    )
    task.execute({"ti": ti})

    options = submitted["conf"].pop("spark.driver.extraJavaOptions")
    assert submitted["conf"] == started["conf"]
    assert started["conf"]["spark.driver.memory"] == "3072m"
    assert started["conf"]["spark.hadoop.fs.s3a.impl"].endswith("PlainKeyS3AFileSystem")
    assert "delta" in started["conf"]["spark.sql.extensions"].lower()
    assert started["new_bytes"] is not None and options.endswith(jvm.start_options(started["new_bytes"]))
