"""Run on arrival under a running Airflow (make bench-small, after benchmarks/small.py).

    python -m benchmarks.arrival [--rounds 3] [--idle-minutes 5]

- latency: clickstream declared `schedule: on_arrival` (quiet period 10 s); a one-file
  increment landed, then the time until the run that took it has committed and stored its
  report (the file's rows are in the table by then), less the quiet period: what arrival
  costs beyond the wait the declaration asks for. In a local folder (listed every 10 s),
  then in S3 with bucket notifications (moto's server on 127.0.0.1, S3 notifying an SQS
  queue of each object created; the listing every 10 minutes, so the queue is what tells).
- idle: the scheduler's, DAG processor's and triggerer's CPU (their children included)
  over `--idle-minutes` with nothing landing: ten pipelines on arrival (ten watchers in the
  triggerer, their clocks at 1 hour), then the same ten `@hourly`, to which an idle hour
  costs ten DAG runs with nothing new: those ten are triggered and their CPU added.
  Each is given per hour (the measured minutes scaled). Figures, never assertions.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from benchmarks.small import TEN, _land_increment, _prepare_root, declarations
from infra.airflow.running import Scheduler
from jobs.lake.layout import Locations
from jobs.run.report import load_reports

QUIET_S = 10
QUIET = {"quiet_period": f"{QUIET_S} seconds"}  # the on_arrival block (listing every 10 s, its default)
COMPONENTS = ("scheduler", "dag-processor", "triggerer")


def _airflow(
    scratch: Path, key: str, names: list[str], on_arrival: dict | None, root: str | None = None
) -> tuple[Scheduler, str]:
    """A running Airflow whose DAGs of `names` are on arrival (`on_arrival`: the block) or
    @hourly, each having run once by its clock over a first arrival."""
    root = root or str(scratch / key / "root")
    _prepare_root(root, names)
    airflow = Scheduler(scratch / key / "home", root)
    schedule = ("on_arrival", on_arrival) if on_arrival else ("@hourly", None)
    airflow.env["JOBS_PIPELINES_DIR"] = str(declarations(scratch / key / "pipelines", names, *schedule))
    airflow.env.pop("JOBS_GROUP_BY_SCHEDULE", None)
    airflow.start([f"jobs_{name}" for name in names])
    for name in names:  # unpaused, each runs once by its clock (the first arrival): let them end
        _wait(lambda name=name: any(r["state"] in ("success", "failed") for r in airflow.runs(f"jobs_{name}")), 900)
    return airflow, root


@contextmanager
def _notifying_bucket(key: str) -> Iterator[tuple[str, str]]:
    """moto's server on 127.0.0.1 (S3 and SQS), its settings in the environment (Airflow's
    components and Spark read them there): a root in a bucket whose clickstream landing
    notifies an SQS queue of each object created. Yields the root and the queue's URL."""
    from moto.server import ThreadedMotoServer

    from infra.s3 import notifications
    from jobs.lake import s3

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{server._server.server_port}"
    settings = {
        "AWS_ACCESS_KEY_ID": "bench-access-key",
        "AWS_SECRET_ACCESS_KEY": "bench-secret-key",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": endpoint,
    }
    try:
        with s3.environment(settings):
            root = f"s3a://lake/{key}"
            s3.client().create_bucket(Bucket="lake")
            queue = notifications.queue("landing")
            notifications.notify(Locations.resolve("clickstream", root=root).landing, queue)
            yield root, queue
    finally:
        server.stop()


def _wait(done, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done within {within_s} s")
        time.sleep(0.5)


def _components(airflow: Scheduler) -> list[psutil.Process]:
    """The long-lived components of the running Airflow."""
    return [p for p in airflow.group() if any(f"airflow {c}" in " ".join(p.cmdline()) for c in COMPONENTS)]


def _cpu_s(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def latency(scratch: Path, rounds: int, on_arrival: dict, root: str | None = None) -> list[float]:
    airflow, root = _airflow(scratch, "latency", ["clickstream"], on_arrival, root)
    runs = Locations.resolve("clickstream", root=root).runs
    found = []
    try:
        for number in range(rounds):
            before = len(load_reports(runs))
            landed = time.monotonic()
            _land_increment(root, "clickstream", f"arrival{number}", one_file=True)
            _wait(lambda before=before: any(r.input_files for r in load_reports(runs)[before:]), 600)
            found.append(time.monotonic() - landed - QUIET_S)
            print(f"  latency round {number + 1}: {found[-1]:.1f} s beyond the quiet period", flush=True)
            time.sleep(QUIET_S)  # the DAG run's last tasks
    finally:
        airflow.stop()
    return found


def idle(scratch: Path, minutes: float) -> dict[str, float]:
    """CPU seconds per hour of the scheduler, DAG processor and triggerer."""
    per_hour = {}
    for key, on_arrival in (("on arrival", True), ("hourly", False)):
        airflow, _ = _airflow(scratch, key.replace(" ", "-"), TEN, QUIET if on_arrival else None)
        try:
            components = _components(airflow)
            time.sleep(30)  # the first runs' last tasks and the DAG processor's next parse
            start = _cpu_s(components)
            time.sleep(minutes * 60)
            idle_cpu = (_cpu_s(components) - start) * 60 / minutes
            extra = 0.0
            if not on_arrival:  # an hour of ten @hourly DAGs: ten runs that find nothing new
                start = _cpu_s(components)
                for name in TEN:
                    airflow.run(f"jobs_{name}")
                extra = _cpu_s(components) - start
            per_hour[key] = idle_cpu + extra
            print(f"  {key}: {idle_cpu:.1f} CPU s/hour idle + {extra:.1f} for the hour's runs", flush=True)
        finally:
            airflow.stop()
    return per_hour


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle-minutes", type=float, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-arrival-") as scratch:
        print("on arrival: latency (local folder)...", flush=True)
        found = {"a local folder": latency(Path(scratch) / "folder", args.rounds, QUIET)}
        print("on arrival: latency (S3, bucket notifications to SQS)...", flush=True)
        with _notifying_bucket("bench-arrival") as (root, queue):
            notified = {**QUIET, "listing_every": "10 minutes", "queue": queue}
            found["S3 with notifications"] = latency(Path(scratch) / "s3", args.rounds, notified, root)
        print(f"on arrival: idle CPU over {args.idle_minutes} minutes, ten pipelines...", flush=True)
        cpu = idle(Path(scratch), args.idle_minutes)
    print("\non arrival")
    for where, seconds in found.items():
        print(
            f"  landing to committed, {where}, beyond the {QUIET_S} s quiet period: "
            f"median {statistics.median(seconds):.1f} s [{', '.join(f'{s:.1f}' for s in seconds)}]"
        )
    for key, seconds in cpu.items():
        print(f"  scheduler + DAG processor + triggerer CPU per idle hour, ten pipelines {key}: {seconds:.0f} s")


if __name__ == "__main__":
    main()
