"""A busy store is not a dead one: S3 answers 503 SlowDown when a prefix is busy and now and
then 500 InternalError, and every client of the product retries them with backoff. Each run is
a real `python -m jobs run` whose S3 traffic (s3a in Spark, boto3, pyarrow) passes through a
proxy that answers a share of the requests itself that way (tests/http_faults.py)."""

from __future__ import annotations

import os
import subprocess

import pytest

from jobs.lake import s3
from jobs.lake.layout import Locations
from jobs.run.report import load_reports
from tests.helpers import REPO, all_lines, assert_run_matches, event, land, python_cmd, table_rows
from tests.http_faults import FaultyS3Proxy
from tests.model import ClickstreamModel

pytestmark = pytest.mark.slow


def test_a_busy_store_is_ridden_out_every_run_succeeding_on_its_first_try(spark, s3_root, s3_endpoint, monkeypatch):
    """5% of the requests of every client (s3a in Spark, boto3 landing and leasing, pyarrow
    reading the ledger and reports) answered 503 SlowDown or 500 InternalError."""
    proxy = FaultyS3Proxy(int(s3_endpoint.rsplit(":", 1)[1]), share=0.05).start()
    locations = Locations.resolve("clickstream", root=s3_root)
    model, arrivals = ClickstreamModel(), 4
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.endpoint)  # every client of this process and the runs
        s3.reset()
        for arrival in range(arrivals):
            files = {
                f"a{arrival}-{i}.json": [event(f"u{n % 3}", f"2023-07-30T1{arrival}:0{i}:{n:02d}Z") for n in range(20)]
                for i in range(3)
            }
            land(locations.landing, files)
            command = python_cmd("run", "clickstream", "--root", s3_root, "--no-validate")
            run = subprocess.run(command, cwd=REPO, env=dict(os.environ), capture_output=True, text=True, timeout=600)
            assert run.returncode == 0, f"arrival {arrival}:\n{run.stdout}{run.stderr}"
            assert_run_matches(load_reports(locations.runs)[-1], model.run([all_lines(files)]))
    finally:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_endpoint)  # the server itself again
        s3.reset()
        proxy.stop()
    answered = sum(proxy.answered.values())
    print(f"\nbusy store: {answered} of {answered + proxy.forwarded} requests answered {dict(proxy.answered)}")
    assert proxy.answered[503] > 0 and proxy.answered[500] > 0  # it was busy, and every run went on
    assert [r.status for r in load_reports(locations.runs)] == ["succeeded"] * arrivals
    assert table_rows(spark, locations.output) == model.rows()
