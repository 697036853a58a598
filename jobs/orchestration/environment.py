"""What the DAGs are configured with, and the environment their tasks run in.

Settings (environment variables of the Airflow processes, read by jobs/settings.py;
`make airflow` sets them): JOBS_ROOT, JOBS_PUBLISH_ROOTS, JOBS_SPARK_CONN_ID (when the
connection does not exist the jobs run on local[*]), JOBS_AWS_CONN_ID (when it does not
exist, the standard AWS_* variables are used as they are), JOBS_RETRY_DELAY_S.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from jobs.executors import executor_python
from jobs.lake.layout import normalize
from jobs.settings import settings

DEFAULT_MASTER = "local[*]"


def root() -> str:
    return normalize(settings().root)


def _connection(conn_id: str):
    """An Airflow connection, or None when it is not defined."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None


def spark_master(conn_id: str) -> str:
    """The master a Spark connection names, as the provider's hook reads it (host, then :port)."""
    connection = _connection(conn_id)
    if connection is None or not connection.host:
        return DEFAULT_MASTER
    return f"{connection.host}:{connection.port}" if connection.port else connection.host


def aws_variables(conn_id: str) -> dict[str, str]:
    """The AWS_* variables an Airflow connection (conn type aws) holds: login = access key
    id, password = secret key, extra region_name, endpoint_url and aws_session_token, as
    the Amazon provider reads them. Empty when the connection does not exist."""
    connection = _connection(conn_id)
    if connection is None:
        return {}
    extra = connection.extra_dejson or {}
    endpoint = extra.get("endpoint_url") or (extra.get("service_config", {}).get("s3", {}).get("endpoint_url"))
    values = {
        "AWS_ACCESS_KEY_ID": connection.login,
        "AWS_SECRET_ACCESS_KEY": connection.password,
        "AWS_SESSION_TOKEN": extra.get("aws_session_token"),
        "AWS_REGION": extra.get("region_name"),
        "AWS_ENDPOINT_URL_S3": endpoint,
    }
    return {key: str(value) for key, value in values.items() if value}


@contextlib.contextmanager
def task_environment(log, spark_conn_id: str | None = None) -> Iterator[None]:
    """The environment a task and its spark-submit run in, for the task's duration.

    The project's interpreter as the driver's, and its spark-submit (the environment's bin
    folder); the executors' Python for the master of `spark_conn_id` (jobs/executors.py;
    local[*] without a connection, which the provider would otherwise take to mean YARN:
    the connection is then defined, as Airflow reads one from AIRFLOW_CONN_<ID>, for the
    task's duration only); and S3 credentials from the AWS connection when there is one.
    Secrets go into this process's environment only: never into Spark's configuration, a
    template field or a log line (Airflow also masks connection passwords in task logs).
    """
    from jobs.lake import s3

    master = spark_master(spark_conn_id) if spark_conn_id else DEFAULT_MASTER
    values = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYSPARK_PYTHON": executor_python(master),
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    }
    if spark_conn_id and _connection(spark_conn_id) is None:
        values[f"AIRFLOW_CONN_{spark_conn_id.upper()}"] = json.dumps({"conn_type": "spark", "host": DEFAULT_MASTER})
        log.info("no Airflow connection %r: running Spark on %s", spark_conn_id, DEFAULT_MASTER)
    conn_id = settings().aws_conn_id
    credentials = aws_variables(conn_id)
    if credentials:
        log.info("S3 credentials from the Airflow connection %r", conn_id)
    values.update(credentials)
    values.update(lineage_parent())
    with s3.environment(values):
        yield


def lineage_parent() -> dict[str, str]:
    """The running task's OpenLineage run, as the OpenLineage provider's macros name it: a
    run's lineage events name it as their parent (jobs/run/lineage.py). Empty outside a task."""
    try:
        from airflow.providers.openlineage.plugins.macros import lineage_parent_id, lineage_root_parent_id
        from airflow.sdk import get_current_context

        task = get_current_context()["ti"]
        return {
            "OPENLINEAGE_PARENT_ID": lineage_parent_id(task),
            "OPENLINEAGE_ROOT_PARENT_ID": lineage_root_parent_id(task),
        }
    except Exception:  # noqa: BLE001 - no task running (a test, a command), or no provider: no parent to name
        return {}
