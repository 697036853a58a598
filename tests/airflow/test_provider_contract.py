"""What the operators read of the Spark provider that it does not publish, read in one place
(jobs/orchestration/operators.py, `submit_exit_code`): this fails when the provider changes it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest


def test_the_exit_code_of_an_operator_s_spark_submit_is_read(tmp_path, monkeypatch):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk.exceptions import AirflowException

    from jobs.orchestration.operators import submit_exit_code

    application = tmp_path / "exits.py"
    application.write_text("import sys\nsys.exit(3)\n")
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_PROBE", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # its spark-submit
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    operator = SparkSubmitOperator(task_id="probe", application=str(application), conn_id="spark_probe")
    assert submit_exit_code(operator) is None  # before it ran
    with pytest.raises(AirflowException):
        operator.execute(context={})
    assert submit_exit_code(operator) == 3
