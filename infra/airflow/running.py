"""A running Airflow (scheduler, DAG processor, triggerer, API server; LocalExecutor) on a
scratch home and port, driven by its REST API: the benchmarks' DAG runs (what production
pays) and the tests of what lives in the scheduler and triggerer (run on arrival).

`airflow dags test` starts Airflow in its own process for every run (its imports, a parse of
the DAG folder, an in-process execution API): about 8 s before the first task of even a
one-task DAG that does nothing. A running scheduler pays none of that per run; its tasks
still start a process each. Started as `make airflow` starts it (infra/airflow/local.py),
on a scratch home and port; stopped by `stop()`, whatever happened.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

from infra.airflow import local

POLL_S = 0.5  # often enough for a figure in seconds; the API server shares the 2 cores
RUN_TIMEOUT_S = 1800
DAG_TIMEOUT_S = 180  # the DAG processor parses every DAG file within this, even on a busy machine


class Scheduler:
    def __init__(self, home: Path, root: Path | str):
        self.home = home
        with socket.socket() as probe:  # a free port on loopback
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.token: str | None = None
        self.env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW_PORT": str(self.port),
            "JOBS_ROOT": str(root),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        }

    def _local(self, command: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "infra.airflow.local", command],
            cwd=local.REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"infra.airflow.local {command}: {(done.stdout + done.stderr)[-2000:]}")

    def start(self, dag_ids: list[str]) -> None:
        self._local("start")
        for dag_id in dag_ids:  # paused at creation; unscheduled here (JOBS_GROUP_BY_SCHEDULE), so no run of its own
            self._wait_for(dag_id)
            self._call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})

    def _wait_for(self, dag_id: str) -> None:
        """Until the DAG processor has parsed the file of `dag_id`: `start` returns once it
        lists any DAG, and it parses the DAG files one after another (a DAG of another file
        can be unknown for a while: a 404)."""
        deadline = time.monotonic() + DAG_TIMEOUT_S
        while True:
            try:
                self._call("GET", f"/api/v2/dags/{dag_id}")
                return
            except urllib.error.HTTPError as error:
                if error.code != 404 or time.monotonic() > deadline:
                    raise
            time.sleep(1)

    def stop(self) -> None:
        self._local("stop")

    def run(self, dag_id: str) -> tuple[float, str, dict[str, float]]:
        """Trigger a run and wait for its end: seconds from the trigger, its state, its tasks' durations."""
        started = time.monotonic()
        run_id = self._call("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None})["dag_run_id"]
        path = f"/api/v2/dags/{dag_id}/dagRuns/{urllib.request.quote(run_id, safe='')}"
        while (state := self._call("GET", path)["state"]) not in ("success", "failed"):
            if time.monotonic() - started > RUN_TIMEOUT_S:
                raise TimeoutError(f"{dag_id} run {run_id} still {state} after {RUN_TIMEOUT_S} s")
            time.sleep(POLL_S)
        seconds = time.monotonic() - started
        instances = self._call("GET", f"{path}/taskInstances")["task_instances"]
        return seconds, state, {f"{i['task_id']} ({i['state']})": i["duration"] or 0.0 for i in instances}

    def group(self) -> list[psutil.Process]:
        """The processes of the running Airflow (one process group)."""
        pgid = int((self.home / "airflow.pid").read_text())
        found = []
        for process in psutil.process_iter():
            try:
                if os.getpgid(process.pid) == pgid:
                    found.append(process)
            except (ProcessLookupError, psutil.Error):
                continue
        return found

    def component(self, name: str) -> psutil.Process:
        """The running Airflow's `name` (`triggerer`, `scheduler`, ...): the process whose own
        command is `airflow <name>` and whose parent's is not (its forked runner has the same
        command). Not the shell that started them all, whose command names every component; a
        process that ends while the group is read (a task's) is passed over."""
        commands = {}
        for process in self.group():
            try:
                commands[process.pid] = (process, process.cmdline(), process.ppid())
            except psutil.Error:
                continue

        def runs(command: list[str]) -> bool:
            return any(
                Path(arg).name == "airflow" and command[at + 1 : at + 2] == [name] for at, arg in enumerate(command)
            )

        found = [
            process
            for process, command, parent in commands.values()
            if runs(command) and not (parent in commands and runs(commands[parent][1]))
        ]
        if len(found) != 1:
            raise AssertionError(f"not one Airflow {name} but {len(found)}: {[commands[p.pid][1] for p in found]}")
        return found[0]

    def kill_and_restart(self, component: psutil.Process) -> subprocess.Popen:
        """A component killed (SIGKILL, as by the OOM killer), and the same command started again
        (in a session of its own: the caller stops it; `stop` stops the first group only)."""
        command, env = component.cmdline(), component.environ()
        component.kill()
        component.wait(30)
        with (self.home / "airflow.log").open("ab") as log:
            return subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)

    def runs(self, dag_id: str) -> list[dict]:
        """The DAG's runs, oldest first (their run_type, state, ...)."""
        found = self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns?order_by=run_after&limit=100")["dag_runs"]
        return sorted(found, key=lambda run: run["run_after"])

    def triggering_events(self, dag_id: str, run_id: str) -> list[dict]:
        """The Asset events that started a run (each with its `extra`)."""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{urllib.request.quote(run_id, safe='')}/upstreamAssetEvents"
        return self._call("GET", path)["asset_events"]

    def assets(self) -> list[dict]:
        """The Assets Airflow knows (each with its watchers and the DAGs scheduled on it), as the UI shows them."""
        return self._call("GET", "/api/v2/assets?limit=100")["assets"]

    def task_log(self, dag_id: str, run_id: str, task_id: str) -> str:
        """What a task's attempts logged (AIRFLOW_HOME/logs, where the API server reads them)."""
        folder = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        return "".join(path.read_text(errors="replace") for path in sorted(folder.glob("attempt=*.log")))

    def failures(self, dag_id: str, runs: list[dict]) -> str:
        """Why the failed ones of `runs` failed: each task's state, and the end of a failed task's log."""
        told = []
        for run in runs:
            if run["state"] != "failed":
                continue
            path = f"/api/v2/dags/{dag_id}/dagRuns/{urllib.request.quote(run['dag_run_id'], safe='')}/taskInstances"
            for task in self._call("GET", path)["task_instances"]:
                told.append(f"{run['dag_run_id']} {task['task_id']}: {task['state']} (tries {task['try_number']})")
                if task["state"] not in ("success", "skipped"):
                    told.append(self.task_log(dag_id, run["dag_run_id"], task["task_id"])[-6000:])
        return "\n".join(told)

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Authorization": f"Bearer {self.token or self._token()}", "Content-Type": "application/json"},
        )
        for attempt in range(3):
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return json.load(response)
            except urllib.error.HTTPError as error:  # SQLite's "database is locked" under the scheduler: a 500
                if error.code < 500 or attempt == 2:
                    raise
                time.sleep(1)
        raise AssertionError("unreachable")

    def _token(self) -> str:
        passwords = self.home / "simple_auth_manager_passwords.json.generated"
        self.token = local.token(f"http://127.0.0.1:{self.port}", passwords)
        return self.token
