"""A run's OpenLineage events (jobs/run/lineage.py), sent by the OpenLineage client through
the transports its own configuration names: a file, and an HTTP receiver of the test's own
on 127.0.0.1, which must get the same events; none at all when nothing is configured; and a
transport that cannot send fails no run. What the events say is checked against the run's
report and the table as Spark reads it back."""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from jobs.exit_codes import ExitCode
from jobs.lake.locks import checkpoint_lock
from jobs.launch import execute, finished_of
from jobs.request import RunRequest
from jobs.run.lineage import configured
from tests.helpers import event, free_port, land_in_order

PARENT = f"airflow/jobs_clickstream.run/{uuid.uuid4()}"
ROOT = f"airflow/jobs_clickstream/{uuid.uuid4()}"


class Receiver(BaseHTTPRequestHandler):
    """An OpenLineage consumer: keeps each event POSTed to /api/v1/lineage."""

    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/api/v1/lineage":
            type(self).received.append(json.loads(body))
        self.send_response(200 if self.path == "/api/v1/lineage" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def receiver():
    Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Receiver.received
    server.shutdown()
    server.server_close()


def configure_file(monkeypatch, path: Path) -> None:
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(path))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")


def said(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_run_says_its_start_and_end_with_its_datasets_and_its_account(
    spark, clickstream, locations, tmp_path, monkeypatch
):
    sent = tmp_path / "lineage.jsonl"
    configure_file(monkeypatch, sent)
    monkeypatch.setenv("OPENLINEAGE_NAMESPACE", "team")
    monkeypatch.setenv("OPENLINEAGE_PARENT_ID", PARENT)
    monkeypatch.setenv("OPENLINEAGE_ROOT_PARENT_ID", ROOT)
    land_in_order(
        locations.landing,
        {
            "a.json": [event("u1", "2023-07-30T10:00:00Z"), event("u2", "2023-07-30T10:01:00Z"), "{not json"],
            "b.json": [event("u1", "2023-07-30T10:40:00Z")],
        },
    )
    request = RunRequest("clickstream", locations, validate=False)

    report = finished_of(execute(request, pipeline=clickstream, spark=spark)).report

    start, end = said(sent)
    assert (start["eventType"], end["eventType"]) == ("START", "COMPLETE")
    assert start["run"]["runId"] == end["run"]["runId"] != report.run_id  # OpenLineage's is a UUID
    assert uuid.UUID(start["run"]["runId"])
    for one in (start, end):
        assert (one["job"]["namespace"], one["job"]["name"]) == ("team", "clickstream")
    parent = end["run"]["facets"]["parent"]
    assert [parent["job"]["namespace"], parent["job"]["name"], parent["run"]["runId"]] == PARENT.split("/")
    assert [parent["root"]["job"]["namespace"], parent["root"]["job"]["name"], parent["root"]["run"]["runId"]] == (
        ROOT.split("/")
    )

    (landing,) = end["inputs"]
    assert (landing["namespace"], landing["name"]) == ("file", locations.landing)
    assert landing["inputFacets"]["inputStatistics"]["rowCount"] == 4 == report.input_rows
    assert landing["inputFacets"]["inputStatistics"]["fileCount"] == 2
    (table,) = end["outputs"]
    assert (table["namespace"], table["name"]) == ("file", locations.output)
    assert table["facets"]["symlinks"]["identifiers"] == [{"namespace": "team", "name": "clickstream", "type": "TABLE"}]
    read_back = spark.read.parquet(locations.output)
    assert {f["name"]: f["type"] for f in table["facets"]["schema"]["fields"]} == {
        f.name: f.dataType.simpleString() for f in read_back.schema.fields
    }
    assert table["outputFacets"]["outputStatistics"]["rowCount"] == read_back.count() == report.output_rows

    account = end["run"]["facets"]["triggerOnce_account"]
    assert account["runId"] == report.run_id and Path(account["report"]).is_file()
    assert (account["inputRows"], account["usedRows"], account["quarantinedRows"]) == (4, 3, 1)
    assert account["balances"] is True and account["quarantineReasons"] == {"malformed_json": 1}
    assert "triggerOnce_account" not in start["run"]["facets"]  # nothing counted yet

    # Nothing new: a run without Spark says so too, its account all zeros.
    finished_of(execute(request, pipeline=clickstream, spark=spark))
    again = said(sent)[2:]
    assert [e["eventType"] for e in again] == ["START", "COMPLETE"]
    assert again[1]["run"]["facets"]["triggerOnce_account"]["inputRows"] == 0

    # A run refused (another holds the checkpoint's lock) changed nothing: ABORT, with why.
    with checkpoint_lock(locations.ledger, "clickstream"):
        refused = finished_of(execute(request, pipeline=clickstream, spark=spark))
    assert refused.code == ExitCode.REFUSED
    start, end = said(sent)[4:]
    assert (start["eventType"], end["eventType"]) == ("START", "ABORT")
    assert end["run"]["facets"]["errorMessage"]["message"] == refused.error


def test_the_same_events_reach_an_http_receiver_and_none_are_sent_unconfigured(
    spark, clickstream, locations, tmp_path, monkeypatch, receiver, caplog
):
    url, received = receiver
    sent = tmp_path / "lineage.jsonl"
    land_in_order(locations.landing, {"a.json": [event("u1", "2023-07-30T10:00:00Z")]})
    request = RunRequest("clickstream", locations, validate=False)

    assert not configured()
    finished_of(execute(request, pipeline=clickstream, spark=spark))  # no transport: nothing sent, nothing printed

    # A receiver that is down fails no run: the events are lost, said in the log.
    monkeypatch.setenv("OPENLINEAGE_URL", "http://127.0.0.1:9")  # the discard port: nothing listens
    land_in_order(locations.landing, {"b.json": [event("u2", "2023-07-30T10:05:00Z")]})
    assert finished_of(execute(request, pipeline=clickstream, spark=spark)).code == ExitCode.OK
    assert "lineage: an OpenLineage event was not sent" in caplog.text

    # The file transport and the HTTP one (the client's composite) get the same events.
    monkeypatch.delenv("OPENLINEAGE_URL")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "composite")
    monkeypatch.setenv(
        "OPENLINEAGE__TRANSPORT__TRANSPORTS",
        json.dumps(
            {
                "file": {"type": "file", "log_file_path": str(sent), "append": True},
                "http": {"type": "http", "url": url},
            }
        ),
    )
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__CONTINUE_ON_FAILURE", "false")
    land_in_order(locations.landing, {"c.json": [event("u3", "2023-07-30T10:50:00Z")]})
    report = finished_of(execute(request, pipeline=clickstream, spark=spark)).report

    assert [e["eventType"] for e in said(sent)] == ["START", "COMPLETE"]
    assert received == said(sent)
    assert received[1]["run"]["facets"]["triggerOnce_account"]["runId"] == report.run_id
