"""Run on arrival under a running Airflow (make bench-small, after benchmarks/small.py).

    python -m benchmarks.arrival [--rounds 3] [--idle-minutes 5]

- latency: clickstream declared `schedule: on_arrival` (quiet period 10 s, the landing
  listed every 10 s); a one-file increment landed, then the time until the run that took
  it has committed and stored its report (the file's rows are in the table by then), less
  the quiet period: what arrival costs beyond the wait the declaration asks for. Local folder.
- idle: the scheduler's, DAG processor's and triggerer's CPU (their children included)
  over `--idle-minutes` with nothing landing: ten pipelines on arrival (ten watchers in the
  triggerer, their clocks at 1 hour), then the same ten `@hourly`, to which an idle hour
  costs ten DAG runs with nothing new: those ten are triggered and their CPU added.
  Each is given per hour (the measured minutes scaled). Figures, never assertions.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from benchmarks.small import TEN, _land_increment, _prepare_root
from infra.airflow.running import Scheduler
from jobs.declare.load import pipelines_dir
from jobs.lake.layout import Locations
from jobs.run.report import load_reports

QUIET_S = 10
COMPONENTS = ("scheduler", "dag-processor", "triggerer")


def _declarations(folder: Path, names: list[str], on_arrival: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        declared = (pipelines_dir() / f"{name}.yaml").read_text()
        if on_arrival:
            schedule = f"schedule: on_arrival\non_arrival: {{quiet_period: {QUIET_S} seconds}}"
            declared = re.sub(r"^schedule: .*$", schedule, declared, flags=re.M)
        (folder / f"{name}.yaml").write_text(declared)
    return folder


def _airflow(scratch: Path, key: str, names: list[str], on_arrival: bool) -> tuple[Scheduler, Path]:
    root = scratch / key / "root"
    _prepare_root(root, names)
    airflow = Scheduler(scratch / key / "home", root)
    airflow.env["JOBS_PIPELINES_DIR"] = str(_declarations(scratch / key / "pipelines", names, on_arrival))
    airflow.env.pop("JOBS_GROUP_BY_SCHEDULE", None)
    airflow.start([f"jobs_{name}" for name in names])
    for name in names:  # unpaused, each runs once by its clock (the first arrival): let them end
        _wait(lambda name=name: any(r["state"] in ("success", "failed") for r in airflow.runs(f"jobs_{name}")), 900)
    return airflow, root


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


def latency(scratch: Path, rounds: int) -> list[float]:
    airflow, root = _airflow(scratch, "latency", ["clickstream"], on_arrival=True)
    runs = Locations.resolve("clickstream", root=str(root)).runs
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
        airflow, _ = _airflow(scratch, key.replace(" ", "-"), TEN, on_arrival)
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
        found = latency(Path(scratch), args.rounds)
        print(f"on arrival: idle CPU over {args.idle_minutes} minutes, ten pipelines...", flush=True)
        cpu = idle(Path(scratch), args.idle_minutes)
    print("\non arrival")
    print(
        f"  landing to committed, beyond the {QUIET_S} s quiet period: median {statistics.median(found):.1f} s "
        f"[{', '.join(f'{s:.1f}' for s in found)}]"
    )
    for key, seconds in cpu.items():
        print(f"  scheduler + DAG processor + triggerer CPU per idle hour, ten pipelines {key}: {seconds:.0f} s")


if __name__ == "__main__":
    main()
