"""Whether a run says its lineage, as the OpenLineage client's own configuration says it
(jobs/run/lineage.py): nothing configured, nothing sent; and the datasets' names, as
OpenLineage's naming conventions have them."""

from __future__ import annotations

import os

import pytest

from jobs.run.lineage import configured
from jobs.run.lineage_events import dataset


@pytest.fixture
def unconfigured(tmp_path, monkeypatch):
    """No OPENLINEAGE_* variable, no openlineage.yml in the working folder or the home's."""
    for name in [n for n in os.environ if n.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_lineage_is_sent_only_where_a_transport_is_configured(unconfigured, monkeypatch, caplog):
    assert not configured()
    (unconfigured / "openlineage.yml").write_text("transport:\n  type: console\n")
    assert configured()
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
    assert not configured()
    monkeypatch.delenv("OPENLINEAGE_DISABLED")
    (unconfigured / "openlineage.yml").write_text("namespace: only\n")  # no transport in it
    assert not configured()
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    assert not configured()  # a file transport needs its path: the client refuses, and says why
    assert "log_file_path" in caplog.text
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(unconfigured / "lineage.jsonl"))
    assert configured()
    monkeypatch.delenv("OPENLINEAGE__TRANSPORT__TYPE")
    monkeypatch.setenv("OPENLINEAGE_URL", "http://127.0.0.1:5000")
    assert configured()


def test_datasets_are_named_as_openlineage_names_them():
    assert dataset("s3a://bucket/tables/clickstream") == ("s3://bucket", "tables/clickstream")
    assert dataset("s3://bucket/landing/") == ("s3://bucket", "landing")
    assert dataset("/srv/root/tables/clickstream") == ("file", "/srv/root/tables/clickstream")
