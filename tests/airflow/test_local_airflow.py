"""`make airflow`: standalone Airflow on 127.0.0.1 lists the DAGs with no import errors,
and `make airflow-stop` leaves no process behind."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from jobs import declare
from tests.helpers import REPO, free_port

pytestmark = pytest.mark.slow


def test_standalone_airflow_serves_the_dags_on_loopback_and_stops_cleanly(tmp_path):
    port = free_port()
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "home"), "AIRFLOW_PORT": str(port), "JOBS_ROOT": str(tmp_path)}
    script = [sys.executable, "-m", "infra.airflow.local"]
    started = subprocess.run([*script, "start"], cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"Airflow UI: http://127.0.0.1:{port}" in started.stdout
        dag_ids = ["jobs_backfill", "jobs_data_quality", *(f"jobs_{name}" for name in declare.load_all())]
        assert f"DAGs: {', '.join(sorted(dag_ids))}; import errors: none" in started.stdout
        assert (tmp_path / "home" / "simple_auth_manager_passwords.json.generated").exists()
        listening = {c.laddr.ip for c in psutil.net_connections("tcp") if c.laddr.port == port and c.status == "LISTEN"}
        assert listening == {"127.0.0.1"}
        pid = int((tmp_path / "home" / "standalone.pid").read_text())
        group = [p for p in psutil.process_iter() if _group(p) == pid]
        assert len(group) > 1, "standalone runs its scheduler, API server and dag processor as children"
    finally:
        stopped = subprocess.run([*script, "stop"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "login: user admin, password in" in started.stdout
    # A zombie has ended; only its reaping (by init, once its parent is gone) is left.
    survivors = [p for p in psutil.process_iter() if _group(p) == pid and _running(p)]
    assert not survivors, "a process of Airflow's group survived"
    assert not any(c.laddr.port == port for c in psutil.net_connections("tcp") if c.status == "LISTEN")


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _group(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except (ProcessLookupError, psutil.Error):
        return None
