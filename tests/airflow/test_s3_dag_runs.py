"""A pipeline DAG on S3, run for real (`airflow dags test`), its credentials only from an
Airflow connection."""

from __future__ import annotations

import json

import pytest

from tests.airflow.dag_runs import arrivals, dags_test
from tests.helpers import S3_BUCKET, S3_SECRET, all_lines, land, table_rows
from tests.model import ClickstreamModel

pytestmark = pytest.mark.slow


def test_a_dag_run_on_s3_takes_its_credentials_from_an_airflow_connection(airflow_home, s3_endpoint, s3_root, spark):
    """No AWS_* variable in Airflow's environment: the credentials come from the connection
    aws_default, and the secret appears nowhere in the output, the logs or the bucket."""
    from jobs.lake import s3

    files = arrivals(0, 2)
    land(f"{s3_root}/landing/clickstream", files)
    connection = {
        "conn_type": "aws",
        "login": "test-access-key",
        "password": S3_SECRET,
        "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
    }
    env = {key: "" for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3", "AWS_REGION")}
    run = dags_test(airflow_home, s3_root, "jobs_clickstream", AIRFLOW_CONN_AWS_DEFAULT=json.dumps(connection), **env)
    assert run.state == "success", run.output[-5000:]
    assert "S3 credentials from the Airflow connection 'aws_default'" in run.output
    model = ClickstreamModel()
    model.run([all_lines(files)])
    assert table_rows(spark, f"{s3_root}/tables/clickstream") == model.rows()
    assert run.xcom("run_report")["input_rows"] == len(all_lines(files))

    assert S3_SECRET not in run.output
    for log in airflow_home.rglob("*"):
        if log.is_file() and log.suffix != ".db":
            assert S3_SECRET.encode() not in log.read_bytes(), log
    prefix = s3_root.removeprefix(f"s3a://{S3_BUCKET}/")
    for page in s3.client().get_paginator("list_objects_v2").paginate(Bucket=S3_BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            body = s3.client().get_object(Bucket=S3_BUCKET, Key=item["Key"])["Body"].read()
            assert S3_SECRET.encode() not in body, item["Key"]
