"""Start, stop or check the local S3-protocol server (moto) on 127.0.0.1.

    .venv/bin/python -m infra.s3.local_server start|stop|status     (make s3-up / s3-down)

Settings come from infra/s3/local.env (port from AWS_ENDPOINT_URL_S3, buckets from
S3_BUCKETS), overridable by the environment. moto keeps objects in memory: stopping the
server forgets them. For a server that keeps data, use MinIO (infra/docker-compose.yml).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from infra import processes
from jobs.settings import settings

HERE = Path(__file__).resolve().parent
STATE = settings().cache_dir / "s3"
PID_FILE = STATE / "server.pid"


def settings() -> dict[str, str]:
    values = {}
    for line in (HERE / "local.env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, value = line.split("=", 1)
            values[key] = os.environ.get(key, value)
    return values


def running_pid() -> int | None:
    return processes.running_pid(PID_FILE)


def start() -> int:
    config = settings()
    port = urlparse(config["AWS_ENDPOINT_URL_S3"]).port or 9000
    if running_pid():
        print(f"local S3 server already running on 127.0.0.1:{port} (pid {running_pid()})")
        return 0
    if processes.port_answers(port):
        sys.exit(f"error: 127.0.0.1:{port} is taken by another program; set AWS_ENDPOINT_URL_S3 to a free port")
    STATE.mkdir(parents=True, exist_ok=True)
    log = (STATE / "server.log").open("ab")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=log,
        start_new_session=True,  # outlives this command; `stop` ends it
    )
    PID_FILE.write_text(str(server.pid))
    deadline = time.monotonic() + 20
    while not processes.port_answers(port):
        if server.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"error: the S3 server did not start; see {STATE / 'server.log'}")
        time.sleep(0.2)

    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=config["AWS_ENDPOINT_URL_S3"],
        region_name=config["AWS_REGION"],
        aws_access_key_id=config["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=config["AWS_SECRET_ACCESS_KEY"],
    )
    for bucket in config["S3_BUCKETS"].split(","):
        client.create_bucket(Bucket=bucket.strip())
    print(f"local S3 server on {config['AWS_ENDPOINT_URL_S3']} (pid {server.pid}), buckets: {config['S3_BUCKETS']}")
    print("use it with: set -a; . infra/s3/local.env; set +a")
    return 0


def stop() -> int:
    pid = running_pid()
    if pid is None:
        print("local S3 server not running")
        PID_FILE.unlink(missing_ok=True)
        return 0
    processes.stop_group(pid, ((signal.SIGTERM, 10), (signal.SIGKILL, 5)))
    PID_FILE.unlink(missing_ok=True)
    print(f"local S3 server stopped (pid {pid})")
    return 0


def status() -> int:
    pid = running_pid()
    print(f"local S3 server running (pid {pid})" if pid else "local S3 server not running")
    return 0 if pid else 1


if __name__ == "__main__":
    commands = {"start": start, "stop": stop, "status": status}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit("usage: local_server.py start|stop|status")
    sys.exit(commands[sys.argv[1]]())
