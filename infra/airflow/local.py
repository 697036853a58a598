"""Start, stop or check a local Airflow for the project's DAGs.

    .venv/bin/python -m infra.airflow.local start|stop|status     (make airflow / airflow-stop)

AIRFLOW_HOME is ./airflow_home (ignored by git): its SQLite metadata DB, logs and the
generated admin password. The components `airflow standalone` would start (API server,
scheduler, dag processor, triggerer) run as one process group, started here rather than
by `standalone` so that every listener is on 127.0.0.1: the scheduler's and triggerer's
log servers bind every interface (Airflow hard-codes it), so they are not started
(`--skip-serve-logs`); with the LocalExecutor the API server reads task logs from
AIRFLOW_HOME/logs. Parallelism is set for a small machine. The Spark connection defaults
to local[*]; settings already in the environment (JOBS_ROOT, AIRFLOW_CONN_SPARK_DEFAULT,
AIRFLOW_CONN_AWS_DEFAULT, ...) win.
"""

from __future__ import annotations

import json
import os
import shlex
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
PID_FILE = HOME / "airflow.pid"  # the process group of the components
LOG = HOME / "airflow.log"
PORT = int(os.environ.get("AIRFLOW_PORT", "8080"))
URL = f"http://127.0.0.1:{PORT}"
PASSWORDS = HOME / "simple_auth_manager_passwords.json.generated"
START_TIMEOUT_S = 240
COMPONENTS = (
    ["api-server"],
    ["scheduler", "--skip-serve-logs"],
    ["dag-processor"],
    ["triggerer", "--skip-serve-logs"],
)
# Right after start the scheduler and triggerer ignore SIGTERM for a while (tens of
# seconds); the whole group gets SIGKILL after this long.
STOP_GRACE_S = 8


def environment() -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    defaults = {
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(PORT),
        "AIRFLOW__API__BASE_URL": URL,  # the links to task pages the run reports keep
        "AIRFLOW__API__WORKERS": "1",
        # What `airflow standalone` would choose: one machine, a generated admin password.
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        # 2 cores: a few task slots, not 32 worker processes.
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "2",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        "JOBS_ROOT": str(REPO / "data"),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    env = {**defaults, **os.environ}
    env["AIRFLOW_HOME"] = str(HOME)
    env["PATH"] = f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


def running_pid() -> int | None:
    """The components' process group, while any of them runs."""
    try:
        pgid = int(PID_FILE.read_text())
    except (FileNotFoundError, ValueError):
        return None
    return pgid if processes.group_alive(pgid) else None


def _get(path: str, token: str | None = None) -> dict:
    request = urllib.request.Request(f"{URL}{path}", headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


def token(url: str = URL, passwords: Path = PASSWORDS) -> str:
    """An API token for the generated admin user (infra/airflow/running.py: another home and port)."""
    username, password = next(iter(json.loads(passwords.read_text()).items()))
    body = json.dumps({"username": username, "password": password}).encode()
    request = urllib.request.Request(
        f"{url}/auth/token", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)["access_token"]


def dags_and_errors() -> tuple[list[str], list[dict]]:
    api_token = token()
    dags = [d["dag_id"] for d in _get("/api/v2/dags?limit=100", api_token)["dags"]]
    errors = _get("/api/v2/importErrors", api_token)["import_errors"]
    return sorted(dags), errors


def _parse_here(airflow: str, env: dict[str, str]) -> subprocess.Popen:
    """The DAG folder parsed by this machine's Airflow, as the DAG processor will: which DAGs
    and how many import errors to wait for (the processor parses one file at a time)."""
    script = (
        "import json; from airflow.dag_processing.dagbag import DagBag; bag = DagBag(); "
        "print(json.dumps({'dags': sorted(bag.dags), 'errors': len(bag.import_errors)}))"
    )
    python = str(Path(airflow).parent / "python")
    return subprocess.Popen(
        [python, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )


def _expected(parsing: subprocess.Popen) -> tuple[set[str], int] | None:
    """What `_parse_here` found, once it has ended; None if it could not tell."""
    if parsing.poll() is None:
        return None
    lines = (parsing.stdout.read() if parsing.stdout else "").strip().splitlines()
    try:
        found = json.loads(lines[-1])
        return set(found["dags"]), int(found["errors"])
    except (IndexError, ValueError, KeyError, TypeError):
        print("note: the DAG folder did not parse here; the DAGs listed below may be the first files only")
        return set(), 0


def start() -> int:
    if running_pid():
        print(f"Airflow already running (pid {running_pid()}): {URL}")
        return 0
    if processes.port_answers(PORT):
        sys.exit(f"error: 127.0.0.1:{PORT} is taken by another program; set AIRFLOW_PORT to a free port")
    HOME.mkdir(parents=True, exist_ok=True)
    print(f"starting Airflow in {HOME} (first time: about a minute)...")
    airflow, env = str(Path(sys.executable).parent / "airflow"), environment()
    migrated = subprocess.run([airflow, "db", "migrate"], env=env, capture_output=True, text=True)
    if migrated.returncode != 0:
        sys.exit(f"error: airflow db migrate failed:\n{(migrated.stdout + migrated.stderr)[-2000:]}")
    # One shell starts the components and waits for them: one process group (and session)
    # for all, which `stop` ends as a whole.
    script = " & ".join(shlex.join([airflow, *component]) for component in COMPONENTS) + " & wait"
    with LOG.open("ab") as log:
        process = subprocess.Popen(["sh", "-c", script], env=env, stdout=log, stderr=log, start_new_session=True)
    PID_FILE.write_text(str(process.pid))
    parsing, expected = _parse_here(airflow, env), None
    deadline = time.monotonic() + START_TIMEOUT_S
    dags: list[str] = []
    while time.monotonic() < deadline:
        expected = expected or _expected(parsing)
        if not processes.group_alive(process.pid):
            sys.exit(f"error: Airflow exited; see {LOG}")
        try:
            healthy = _get("/api/v2/monitor/health")["metadatabase"]["status"] == "healthy"
            dags, errors = dags_and_errors() if healthy and PASSWORDS.exists() else ([], [])
        except (urllib.error.URLError, OSError, KeyError, ValueError):
            dags, errors = [], []
        # Every DAG and import error this machine finds, not just the first file parsed.
        if dags and expected and expected[0] <= set(dags) and len(errors) >= expected[1]:
            break
        time.sleep(2)
    else:
        parsing.kill()
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
    print(f"stopping Airflow (process group {pid}): SIGTERM, SIGKILL after {STOP_GRACE_S}s...", flush=True)
    processes.stop_group(pid, ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5)))
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
