"""A Spark standalone cluster on this machine: one master and two workers, started from the
Spark that ships with pyspark (`spark-class` with the standalone Master and Worker).

    .venv/bin/python -m infra.spark.cluster start|stop|status     (make cluster / cluster-stop)

Everything listens on 127.0.0.1. The workers are started the way nodes of a real cluster
run: a clean environment, their own working directories, and their own Python
(`<cache>/cluster/python`: pyspark and the libraries the Python workers import, but not
the `jobs` package, which each application ships to them). Their S3 credentials come from
infra/s3/local.env, as a real node's come from its instance role: the nodes have their
own access to the bucket, so no secret travels in Spark's configuration.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from infra import processes
from jobs.settings import settings

HERE = Path(__file__).resolve().parent
CACHE = settings().cache_dir
LOCK = HERE.parent.parent / "requirements.txt"
# What the executors' Python workers import (processors/, flow/guard.py), at the lock's versions.
WORKER_PACKAGES = ("pyspark", "pandas", "pyarrow", "msgspec", "pydantic")
# Variables a node keeps from the environment that starts it; everything else is the node's own.
KEPT = ("JAVA_HOME", "HOME", "LANG", "TMPDIR")
# Each application copies what it ships (the jobs package) into every executor's folder: a
# worker removes the folders of finished applications after an hour. The jar lock's jars are
# not copied: the nodes read them where `make jars` put them (jobs/session.py s3a_conf).
WORKER_SETTINGS = {
    "SPARK_WORKER_OPTS": "-Dspark.worker.cleanup.enabled=true -Dspark.worker.cleanup.interval=600 "
    "-Dspark.worker.cleanup.appDataTtl=3600"
}


@dataclass(frozen=True)
class Cluster:
    """One master and `workers` workers, each with `cores` cores and `memory` of executor memory."""

    home: Path = CACHE / "cluster"  # pid files, logs, the workers' directories
    python_env: Path = CACHE / "cluster" / "python"  # the workers' Python (a virtual environment)
    master_port: int = 7077
    ui_port: int = 8090  # away from Airflow's 8080
    workers: int = 2
    cores: int = 1
    memory: str = "2g"

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    @property
    def python(self) -> Path:
        """The workers' Python: a virtual environment of its own, without the jobs package."""
        return self.python_env / "bin" / "python"

    def _pid_files(self) -> list[Path]:
        return [self.home / "master.pid", *(self.home / f"worker-{n}.pid" for n in range(1, self.workers + 1))]

    def running(self) -> bool:
        return any(processes.running_pid(pid_file) for pid_file in self._pid_files())

    def state(self) -> dict:
        """The master's view (its web UI's JSON): workers, running and completed applications."""
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as answer:
            return json.load(answer)

    def alive_workers(self) -> list[dict]:
        try:
            return [worker for worker in self.state()["workers"] if worker["state"] == "ALIVE"]
        except OSError:
            return []

    def start(self, node_environment: dict[str, str], wait_s: float = 90) -> None:
        """Start the master and the workers, and return once every worker is registered."""
        if self.running():
            raise ClusterError(f"a cluster is already running from {self.home}; stop it first")
        for port in (self.master_port, self.ui_port):
            if processes.port_answers(port):
                raise ClusterError(f"127.0.0.1:{port} is taken by another program")
        self.home.mkdir(parents=True, exist_ok=True)
        self.ensure_python()
        environment = self._node_environment(node_environment)
        self._launch("master", ["org.apache.spark.deploy.master.Master", *self._master_args()], environment)
        for number in range(1, self.workers + 1):
            work_dir = self.home / f"worker-{number}"
            work_dir.mkdir(exist_ok=True)
            worker = ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--webui-port", "0"]
            worker += ["--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work_dir)]
            self._launch(f"worker-{number}", [*worker, self.master_url], {**environment, **WORKER_SETTINGS})
        deadline = time.monotonic() + wait_s
        while len(self.alive_workers()) < self.workers:
            if time.monotonic() > deadline or not all(processes.running_pid(p) for p in self._pid_files()):
                self.stop()
                raise ClusterError(f"the cluster did not come up within {wait_s:.0f}s; see the logs in {self.home}")
            time.sleep(0.5)

    def stop(self) -> list[int]:
        """Stop exactly the processes this cluster started (their process groups); their pids."""
        stopped = []
        for pid_file in reversed(self._pid_files()):
            pid = processes.running_pid(pid_file)
            if pid is not None:
                processes.stop_group(pid, ((signal.SIGTERM, 10), (signal.SIGKILL, 5)))
                stopped.append(pid)
            pid_file.unlink(missing_ok=True)
        return stopped

    def ensure_python(self) -> None:
        """The workers' Python, created or reused: the driver's interpreter version (PySpark
        requires the same minor version on both sides), packages pinned by the lock."""
        stamp = self.python_env / ".synced-lock"
        wanted = f"{sys.version}\n{WORKER_PACKAGES}\ncompiled\n{LOCK.read_text()}"
        if stamp.exists() and stamp.read_text() == wanted:
            return
        uv = Path(sys.executable).parent / "uv"
        base = getattr(sys, "_base_executable", sys.executable)
        print(f"setting up the workers' Python in {self.python_env} ...", flush=True)
        subprocess.run([uv, "venv", "-q", "--allow-existing", "--python", base, self.python_env], check=True)
        subprocess.run(
            [uv, "pip", "install", "-q", "--compile-bytecode", "--python", self.python, *WORKER_PACKAGES, "-c", LOCK],
            check=True,
        )
        stamp.write_text(wanted)

    def _master_args(self) -> list[str]:
        return ["--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(self.ui_port)]

    def _node_environment(self, extra: dict[str, str]) -> dict[str, str]:
        import pyspark

        kept = {key: os.environ[key] for key in KEPT if key in os.environ}
        return {
            **kept,
            # `python3` on a node is its own Python; executors inherit this PATH.
            "PATH": f"{self.python.parent}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
            "SPARK_HOME": str(Path(pyspark.__file__).parent),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "512m",
            **extra,
        }

    def _launch(self, name: str, arguments: list[str], environment: dict[str, str]) -> None:
        spark_class = Path(environment["SPARK_HOME"]) / "bin" / "spark-class"
        log = (self.home / f"{name}.log").open("ab")
        process = subprocess.Popen(
            [str(spark_class), *arguments],
            cwd=self.home,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # its own process group: stop() ends the JVM and its children
        )
        (self.home / f"{name}.pid").write_text(str(process.pid))


class ClusterError(RuntimeError):
    pass


def _local_s3_credentials() -> dict[str, str]:
    """The nodes' access to the local S3 server (make s3-up): its development keys."""
    from infra.s3 import local_server

    config = local_server.settings()
    return {key: config[key] for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}


def main(command: str) -> int:
    cluster = Cluster(
        master_port=int(os.environ.get("SPARK_MASTER_PORT", 7077)),
        ui_port=int(os.environ.get("SPARK_MASTER_WEBUI_PORT", 8090)),
    )
    if command == "start":
        if cluster.running():
            print(f"the cluster is already running: {cluster.master_url} (UI {cluster.ui_url})")
            return 0
        try:
            cluster.start(_local_s3_credentials())
        except ClusterError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        workers = cluster.alive_workers()
        print(f"Spark master {cluster.master_url}, web UI {cluster.ui_url}")
        for worker in workers:
            print(f"  worker {worker['id']}: {worker['cores']} core(s), {worker['memory']} MB")
        print(f"run a pipeline on it: SPARK_MASTER={cluster.master_url} .venv/bin/python -m jobs run clickstream ...")
        print("stop it with: make cluster-stop")
        return 0
    if command == "stop":
        stopped = cluster.stop()
        print(f"cluster stopped (pids {', '.join(map(str, stopped))})" if stopped else "the cluster was not running")
        return 0
    if cluster.running() and cluster.alive_workers():
        print(f"running: {cluster.master_url}, {len(cluster.alive_workers())} worker(s), UI {cluster.ui_url}")
        return 0
    print("the cluster is not running")
    return 1


if __name__ == "__main__":
    commands = ("start", "stop", "status")
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit("usage: python -m infra.spark.cluster start|stop|status")
    sys.exit(main(sys.argv[1]))
