"""`make airflow`: a local Airflow whose every listener is on 127.0.0.1 lists the DAGs with
no import errors, and `make airflow-stop` says what it does and leaves no process behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from jobs import declare
from tests.helpers import REPO, free_port

pytestmark = pytest.mark.slow


SLOW_DAG = """
import time
from airflow.sdk import DAG

time.sleep(8)
with DAG("slow_to_parse", schedule=None):
    pass
"""


def test_local_airflow_serves_the_dags_on_loopback_only_and_stops_cleanly(tmp_path):
    port = free_port()
    # The project's DAG files and one slow to parse: `start` lists every DAG, not the first files parsed.
    dags = shutil.copytree(REPO / "dags", tmp_path / "dags", ignore=shutil.ignore_patterns("__pycache__"))
    (dags / "slow_to_parse.py").write_text(SLOW_DAG)
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "home"),
        "AIRFLOW_PORT": str(port),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "JOBS_ROOT": str(tmp_path),
    }
    script = [sys.executable, "-m", "infra.airflow.local"]
    started = subprocess.run([*script, "start"], cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"Airflow UI: http://127.0.0.1:{port}" in started.stdout
        dag_ids = [
            "jobs_backfill",
            "jobs_data_quality",
            "jobs_maintenance",
            "jobs_rebuild",
            "slow_to_parse",
            *(f"jobs_{name}" for name in declare.load_all()),
        ]
        assert f"DAGs: {', '.join(sorted(dag_ids))}; import errors: none" in started.stdout
        assert (tmp_path / "home" / "simple_auth_manager_passwords.json.generated").exists()
        pid = int((tmp_path / "home" / "airflow.pid").read_text())
        group = [p for p in psutil.process_iter() if _group(p) == pid]
        commands = " | ".join(_command(p) for p in group)
        for component in ("api_server", "scheduler", "dag-processor", "triggerer"):  # the API server's own title
            assert f"airflow {component}" in commands
        # Every listener of Airflow's processes, the API server's and any log server's, on loopback.
        members = {p.pid for p in group}
        listening = {
            (c.laddr.ip, c.laddr.port)
            for c in psutil.net_connections("tcp")
            if c.status == "LISTEN" and c.pid in members
        }
        assert ("127.0.0.1", port) in listening
        assert {ip for ip, _ in listening} == {"127.0.0.1"}, listening
    finally:
        started_stop = time.monotonic()
        stopped = subprocess.run([*script, "stop"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        print(f"make airflow-stop: {time.monotonic() - started_stop:.1f}s")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "stopping Airflow (process group" in stopped.stdout and "Airflow stopped" in stopped.stdout
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


def _command(process: psutil.Process) -> str:
    """A process's command line, with the Airflow script by its name (airflow scheduler ...)."""
    try:
        return " ".join(process.cmdline()).replace(str(Path(sys.executable).parent / "airflow"), "airflow")
    except psutil.Error:
        return ""
