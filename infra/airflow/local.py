"""Start, stop or check a local Airflow (`airflow standalone`) for the project's DAGs.

    .venv/bin/python -m infra.airflow.local start|stop|status     (make airflow / airflow-stop)

AIRFLOW_HOME is ./airflow_home (ignored by git): its SQLite metadata DB, logs and the
generated admin password. The API server and UI listen on 127.0.0.1 only. Parallelism is
set for a small machine. The Spark connection defaults to local[*]; settings already in
the environment (JOBS_ROOT, AIRFLOW_CONN_SPARK_DEFAULT, AIRFLOW_CONN_AWS_DEFAULT, ...) win.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from infra import processes

REPO = Path(__file__).resolve().parents[2]

HOME = Path(os.environ.get("AIRFLOW_HOME") or REPO / "airflow_home")
PID_FILE = HOME / "standalone.pid"
LOG = HOME / "standalone.log"
PORT = int(os.environ.get("AIRFLOW_PORT", "8080"))
URL = f"http://127.0.0.1:{PORT}"
PASSWORDS = HOME / "simple_auth_manager_passwords.json.generated"
START_TIMEOUT_S = 240


def environment() -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    defaults = {
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(PORT),
        "AIRFLOW__API__WORKERS": "1",
        # 2 cores: a few task slots, not 32 worker processes.
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "2",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        "JOBS_ROOT": str(REPO / "data"),
        "JOBS_CACHE_DIR": str(REPO / ".cache"),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    env = {**defaults, **os.environ}
    env["AIRFLOW_HOME"] = str(HOME)
    env["PATH"] = f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


def running_pid() -> int | None:
    return processes.running_pid(PID_FILE)


def _get(path: str, token: str | None = None) -> dict:
    request = urllib.request.Request(f"{URL}{path}", headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


def _token() -> str:
    username, password = next(iter(json.loads(PASSWORDS.read_text()).items()))
    body = json.dumps({"username": username, "password": password}).encode()
    request = urllib.request.Request(
        f"{URL}/auth/token", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)["access_token"]


def dags_and_errors() -> tuple[list[str], list[dict]]:
    token = _token()
    dags = [d["dag_id"] for d in _get("/api/v2/dags?limit=100", token)["dags"]]
    errors = _get("/api/v2/importErrors", token)["import_errors"]
    return sorted(dags), errors


def start() -> int:
    if running_pid():
        print(f"Airflow already running (pid {running_pid()}): {URL}")
        return 0
    if processes.port_answers(PORT):
        sys.exit(f"error: 127.0.0.1:{PORT} is taken by another program; set AIRFLOW_PORT to a free port")
    HOME.mkdir(parents=True, exist_ok=True)
    print(f"starting Airflow in {HOME} (first time: about a minute)...")
    with LOG.open("ab") as log:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "airflow"), "standalone"],
            env=environment(),
            stdout=log,
            stderr=log,
            start_new_session=True,  # its own process group, which `stop` ends as a whole
        )
    PID_FILE.write_text(str(process.pid))
    deadline = time.monotonic() + START_TIMEOUT_S
    dags: list[str] = []
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"error: Airflow exited ({process.returncode}); see {LOG}")
        try:
            healthy = _get("/api/v2/monitor/health")["metadatabase"]["status"] == "healthy"
            dags, errors = dags_and_errors() if healthy and PASSWORDS.exists() else ([], [])
        except (urllib.error.URLError, OSError, KeyError, ValueError):
            dags, errors = [], []
        if dags:
            break
        time.sleep(2)
    else:
        sys.exit(f"error: Airflow did not list the DAGs within {START_TIMEOUT_S}s; see {LOG} (make airflow-stop)")
    print(f"Airflow UI: {URL}  (pid {process.pid}, log {LOG})")
    username = next(iter(json.loads(PASSWORDS.read_text())), "admin")
    print(f"login: user {username}, password in {PASSWORDS}")
    print(f"DAGs: {', '.join(dags)}; import errors: {len(errors) or 'none'}")
    for error in errors:
        print(f"  {error.get('filename')}: {error.get('stack_trace', '').strip().splitlines()[-1:]}")
    print("stop it with: make airflow-stop")
    return 1 if errors else 0


def stop() -> int:
    pid = running_pid()
    if pid is None:
        print("Airflow not running")
        PID_FILE.unlink(missing_ok=True)
        return 0
    # SIGINT first: standalone then stops its scheduler, API server, triggerer and dag
    # processor itself; plain SIGTERM left children behind. Then the whole group, to be sure.
    processes.stop_group(pid, ((signal.SIGINT, 30), (signal.SIGTERM, 15), (signal.SIGKILL, 5)))
    PID_FILE.unlink(missing_ok=True)
    print(f"Airflow stopped (pid {pid} and its process group)")
    return 0


def status() -> int:
    pid = running_pid()
    if not pid:
        print("Airflow not running")
        return 1
    dags, errors = dags_and_errors()
    print(f"Airflow running (pid {pid}): {URL}; DAGs: {', '.join(dags)}; import errors: {len(errors) or 'none'}")
    return 0


if __name__ == "__main__":
    commands = {"start": start, "stop": stop, "status": status}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit("usage: local.py start|stop|status")
    sys.exit(commands[sys.argv[1]]())
