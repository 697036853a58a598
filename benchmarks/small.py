"""What small increments cost: the product's runs against the start every Spark job pays.

    python -m benchmarks.small [--rounds 3]      (make bench-small; about 20 minutes)

Each round lands a small increment and times, whole and in turn (the order rotates
every round, so that none always goes first):
- floor: a bare PySpark script (benchmarks/floor.py) reads one small JSON file and writes
  one Parquet file;
- one new file: `python -m jobs run clickstream --no-validate` over one new file;
- nothing new: the same command again, with nothing new landed;
- one new file, delta: the same run of clickstream declared `output: {format: delta}`;
- ten, one application each: ten pipelines with one small arrival each, run one after the
  other, each its own `python -m jobs run NAME --no-validate`;
- ten, one application: the same ten in one `python -m jobs run NAME... --no-validate`;
- run and validate: `python -m jobs run clickstream` over one new file (what a DAG run does);
- DAG run: `airflow dags test jobs_clickstream` over one new file;
- Airflow floor: `airflow dags test` of a DAG whose one task does nothing (what every
  `dags test` costs before any task of the product runs);
- DAG run, scheduler: `jobs_clickstream` triggered on a running Airflow (scheduler,
  LocalExecutor: `make airflow`) over one new file, from the trigger to the run's end; then
  again with nothing new;
- group DAG run: `airflow dags test jobs_group_hourly` (JOBS_GROUP_BY_SCHEDULE, the ten
  declared @hourly), one small arrival per member.
Each increment is a sample arrival landed again under new names, its string ids tagged
(new events, not repeats). Every root is primed first (a first arrival and run, untimed). Prints the median of each
and the ratios the product aims at (README, "Performance"). Figures, never assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.dag_runs import AIRFLOW, _dag_run, _environment
from benchmarks.measure import REPO, measure
from demo import samples
from infra.airflow.running import Scheduler
from jobs import declare
from jobs.lake import fs
from jobs.lake.landing import land_lines
from jobs.lake.layout import Locations, join

PY = sys.executable
# The shipped pipelines but the one that infers its schema: each reads its own sample events.
TEN = [name for name in sorted(samples.SAMPLES) if name != "clickstream_inferred"]
GROUP_DAG = "jobs_group_hourly"
NOOP_DAG = """from airflow.sdk import dag, task


@dag(schedule=None)
def airflow_floor():
    @task
    def nothing():
        return None

    nothing()


airflow_floor()
"""
_LIST_DAGS = (
    "import glob, runpy\n"
    "for dag_file in sorted(glob.glob('dags/*.py')):\n"
    "    print(*(k for k, v in runpy.run_path(dag_file).items() if type(v).__name__ == 'DAG'))"
)


def declarations(
    folder: Path, names: list[str], schedule: str, on_arrival: dict | None = None, table_format: str | None = None
) -> Path:
    """A pipelines folder (for JOBS_PIPELINES_DIR) with the shipped declarations of `names`,
    each on `schedule` (and, on arrival, its `on_arrival` block) whatever it ships with (and
    its table in `table_format`, when given)."""
    import yaml

    from jobs.declare.load import pipelines_dir

    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        raw = yaml.safe_load((pipelines_dir() / f"{name}.yaml").read_text())
        raw.pop("on_arrival", None)
        raw["schedule"] = schedule
        if on_arrival:
            raw["on_arrival"] = on_arrival
        if table_format:
            raw["output"] = {**raw["output"], "format": table_format}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return folder


def _prepare_root(root: Path | str, names: list[str]) -> None:
    for name in names:
        locations = Locations.resolve(name, root=str(root))
        for file_name, text in samples.DIMENSIONS.get(name, {}).items():
            fs.write_text(join(locations.dimensions, file_name), text)
        land_lines(samples.arrivals(name)[0], locations.landing)


def _tagged(line: str, tag: str) -> str:
    """The line with `tag` appended to its string ids (keys `id` or `*_id`): the same events
    again would be duplicates (a join's pairs, an events table's rows), not an increment."""
    try:
        record = json.loads(line)
    except ValueError:
        return line  # a sample's unusable line stays as it is
    if not isinstance(record, dict):
        return line
    for key, value in record.items():
        if isinstance(value, str) and (key == "id" or key.endswith("_id")):
            record[key] = f"{value}-{tag}"
    return json.dumps(record)


def _land_increment(root: Path | str, name: str, tag: str, *, one_file: bool = False) -> None:
    """The pipeline's second sample arrival (or its first file only), under new names and ids."""
    files = samples.arrivals(name)[1]
    if one_file:
        files = dict(list(files.items())[:1])
    renamed = {
        f"{path.rsplit('/', 1)[0] + '/' if '/' in path else ''}{tag}-{path.rsplit('/', 1)[-1]}": [
            _tagged(line, tag) for line in lines
        ]
        for path, lines in files.items()
    }
    land_lines(renamed, Locations.resolve(name, root=str(root)).landing)


def _jobs(*args: str) -> list[str]:
    return [PY, "-m", "jobs", *args]


def _first_runs(root: Path, names: list[str], env: dict[str, str] | None = None) -> None:
    """Each pipeline's first arrival landed in `root` and run (untimed)."""
    _prepare_root(root, names)
    for name in names:
        subprocess.run(
            _jobs("run", name, f"--root={root}", "--no-validate"),
            cwd=REPO,
            capture_output=True,
            check=True,
            env={**os.environ, **(env or {})},
        )


class Bench:
    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.roots = {key: scratch / key for key in ("single", "delta", "separate", "together", "dags", "scheduled")}
        # clickstream into a Delta table, for "one new file, delta"
        self.delta_env = {"JOBS_PIPELINES_DIR": str(scratch / "pipelines-delta")}
        self.home = scratch / "airflow"
        self.scheduler: Scheduler | None = None
        self.times: dict[str, list[float]] = {}
        self.peaks: dict[str, int] = {}  # the largest memory (PSS) of each, its whole process tree
        self.tasks: dict[str, dict[str, float]] = {}  # a DAG run's tasks, the last round's
        self.failed: dict[str, str] = {}
        self.tag = 0

    def time(self, label: str, command: list[str], env: dict[str, str] | None = None) -> None:
        measured = measure(command, env=env)
        if measured.returncode != 0:
            self.failed[label] = f"exit {measured.returncode}: {(measured.stderr or measured.stdout)[-300:]}"
            return
        self.times.setdefault(label, []).append(measured.seconds)
        self.peaks[label] = max(self.peaks.get(label, 0), measured.peak_memory)

    def prime(self, chosen: list[str]) -> None:
        """A first arrival and run in each root the chosen variants use."""
        source = self.scratch / "floor.json"
        source.write_text("".join(line + "\n" for line in samples.arrivals("clickstream")[0]["arrival-1-a.json"]))
        if {"one new file", "run and validate"} & set(chosen):
            _first_runs(self.roots["single"], ["clickstream"])
        if "one new file, delta" in chosen:
            declarations(Path(self.delta_env["JOBS_PIPELINES_DIR"]), ["clickstream"], "@hourly", table_format="delta")
            _first_runs(self.roots["delta"], ["clickstream"], self.delta_env)
        for key, variant in (("separate", "ten separate"), ("together", "ten together")):
            if variant in chosen:
                _first_runs(self.roots[key], TEN)
        if "DAG run, scheduler" in chosen:
            _prepare_root(self.roots["scheduled"], ["clickstream"])
            self.scheduler = Scheduler(self.scratch / "airflow-scheduled", self.roots["scheduled"])
            self.scheduler.start(["jobs_clickstream"])
            self.scheduler.run("jobs_clickstream")
        if not {"DAG run", "group DAG run", "Airflow floor"} & set(chosen):
            return
        self.home.mkdir()
        dags_root = self.roots["dags"]
        subprocess.run(
            [AIRFLOW, "db", "migrate"], env=_environment(self.home, dags_root), capture_output=True, check=True
        )
        _prepare_root(dags_root, sorted(declare.load_all()))
        _dag_run(self.home, dags_root, "jobs_clickstream")
        if GROUP_DAG in self._dag_ids():
            _dag_run(self.home, dags_root, GROUP_DAG)

    def _dag_ids(self) -> set[str]:
        """The DAGs this version builds (as the dags folder would), read in a process of their own."""
        listed = subprocess.run(
            [PY, "-c", _LIST_DAGS],
            cwd=REPO,
            env=_environment(self.home, self.roots["dags"]),
            capture_output=True,
            text=True,
            check=False,
        )
        return set(listed.stdout.split())

    def _new_tag(self) -> str:
        self.tag += 1
        return f"bench{self.tag}"

    def variants(self) -> dict:
        single, separate, together, dags = (self.roots[k] for k in ("single", "separate", "together", "dags"))
        floor_source = self.scratch / "floor.json"

        def floor() -> None:
            target = self.scratch / "floor-out"
            shutil.rmtree(target, ignore_errors=True)
            self.time("floor", [PY, str(REPO / "benchmarks" / "floor.py"), str(floor_source), str(target)])

        def one_file() -> None:
            _land_increment(single, "clickstream", self._new_tag(), one_file=True)
            self.time("one new file", _jobs("run", "clickstream", f"--root={single}", "--no-validate"))
            self.time("nothing new", _jobs("run", "clickstream", f"--root={single}", "--no-validate"))

        def one_file_delta() -> None:
            delta = self.roots["delta"]
            _land_increment(delta, "clickstream", self._new_tag(), one_file=True)
            self.time(
                "one new file, delta", _jobs("run", "clickstream", f"--root={delta}", "--no-validate"), self.delta_env
            )

        def validated() -> None:
            _land_increment(single, "clickstream", self._new_tag(), one_file=True)
            self.time("run and validate", _jobs("run", "clickstream", f"--root={single}"))

        def ten_separate() -> None:
            tag = self._new_tag()
            seconds = 0.0
            for name in TEN:
                _land_increment(separate, name, tag)
                measured = measure(_jobs("run", name, f"--root={separate}", "--no-validate"))
                if measured.returncode != 0:
                    self.failed["ten, one application each"] = f"{name} exit {measured.returncode}"
                    return
                seconds += measured.seconds
            self.times.setdefault("ten, one application each", []).append(seconds)

        def ten_together() -> None:
            tag = self._new_tag()
            for name in TEN:
                _land_increment(together, name, tag)
            self.time("ten, one application", _jobs("run", *TEN, f"--root={together}", "--no-validate"))

        def dag_run() -> None:
            _land_increment(dags, "clickstream", self._new_tag(), one_file=True)
            self._time_dag("DAG run", "jobs_clickstream")

        def airflow_floor() -> None:
            folder = self.scratch / "floor-dags"
            folder.mkdir(exist_ok=True)
            (folder / "airflow_floor.py").write_text(NOOP_DAG)
            env = {**_environment(self.home, dags), "AIRFLOW__CORE__DAGS_FOLDER": str(folder)}
            self.time("Airflow floor", [AIRFLOW, "dags", "test", "airflow_floor"], env=env)

        def scheduled_dag_run() -> None:
            _land_increment(self.roots["scheduled"], "clickstream", self._new_tag(), one_file=True)
            self._time_scheduled("DAG run, scheduler")
            self._time_scheduled("nothing new DAG run, scheduler")

        def group_dag_run() -> None:
            tag = self._new_tag()
            for name in sorted(declare.load_all()):
                _land_increment(dags, name, tag)
            self._time_dag("group DAG run", GROUP_DAG)

        return {
            "floor": floor,
            "one new file": one_file,
            "one new file, delta": one_file_delta,
            "run and validate": validated,
            "ten separate": ten_separate,
            "ten together": ten_together,
            "DAG run": dag_run,
            "Airflow floor": airflow_floor,
            "DAG run, scheduler": scheduled_dag_run,
            "group DAG run": group_dag_run,
        }

    def _time_scheduled(self, label: str) -> None:
        assert self.scheduler is not None, "primed with the variant"
        seconds, state, tasks = self.scheduler.run("jobs_clickstream")
        if state != "success":
            self.failed[label] = f"jobs_clickstream ended {state}"
            return
        self.times.setdefault(label, []).append(seconds)
        self.tasks[label] = tasks

    def _time_dag(self, label: str, dag_id: str) -> None:
        if dag_id not in self._dag_ids():
            self.failed[label] = f"no DAG {dag_id} in this version"
            return
        seconds, state, tasks = _dag_run(self.home, self.roots["dags"], dag_id)
        if state != "success":
            self.failed[label] = f"{dag_id} ended {state}"
            return
        self.times.setdefault(label, []).append(seconds)
        self.tasks[label] = tasks


def _median(times: dict[str, list[float]], label: str) -> float | None:
    return statistics.median(times[label]) if times.get(label) else None


def report(bench: Bench) -> None:
    print("\nmedian wall time of each (seconds), every round's figures in brackets; peak memory")
    for label, seconds in bench.times.items():
        rounds = ", ".join(f"{s:.1f}" for s in seconds)
        peak = f"{bench.peaks[label] / 2**30:.2f} GiB" if label in bench.peaks else ""
        print(f"  {label:<28} {statistics.median(seconds):7.1f}   [{rounds}]  {peak}")
    for label, tasks in bench.tasks.items():
        print(f"  {label}, its tasks in the last round: " + ", ".join(f"{t} {s:.1f}" for t, s in tasks.items()))
    for label, why in bench.failed.items():
        print(f"  {label:<28}     n/a   ({why})")
    ratios = [
        ("one new file / floor", "one new file", "floor", 1.3),
        ("nothing new / floor", "nothing new", "floor", 1.2),
        ("run and validate / one new file", "run and validate", "one new file", 1.10),
        ("one new file, delta / one new file", "one new file, delta", "one new file", 1.10),
        ("ten, one application / one new file", "ten, one application", "one new file", 2.5),
        ("ten, one application each / one new file", "ten, one application each", "one new file", None),
        ("DAG run, scheduler / run and validate", "DAG run, scheduler", "run and validate", 1.5),
        ("DAG run (dags test) / run and validate", "DAG run", "run and validate", None),
        ("DAG run, scheduler / one new file", "DAG run, scheduler", "one new file", None),
        ("group DAG run / DAG run", "group DAG run", "DAG run", None),
    ]
    print("\nratios (aim)")
    for title, top, bottom, aim in ratios:
        a, b = _median(bench.times, top), _median(bench.times, bottom)
        figure = f"{a / b:5.2f}" if a and b else "  n/a"
        print(f"  {title:<44} {figure}   {f'(at most {aim})' if aim else ''}")
    floor, validated = _median(bench.times, "Airflow floor"), _median(bench.times, "run and validate")
    if floor and validated:  # what `dags test` could reach if the product's own part cost nothing extra
        title = "(Airflow floor + run and validate) / run and validate"
        print(f"  {title:<44} {(floor + validated) / validated:5.2f}   (the least a dags test run can reach)")


def main() -> None:
    os.environ["JOBS_GROUP_BY_SCHEDULE"] = "1"  # the group DAG jobs_group_hourly (docs/airflow.md, "Group DAGs")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every variant (default: %(default)s)")
    parser.add_argument("--only", nargs="*", help="only these variants (floor always runs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-small-") as scratch:
        # Every one @hourly (rack_alerts ships on arrival): the ten are the group jobs_group_hourly.
        os.environ["JOBS_PIPELINES_DIR"] = str(declarations(Path(scratch) / "pipelines", TEN, "@hourly"))
        bench = Bench(Path(scratch))
        variants = bench.variants()
        chosen = [name for name in variants if not args.only or name in args.only or name == "floor"]
        print("priming every root (first arrivals and runs, not timed)...", flush=True)
        try:
            bench.prime(chosen)
            for number in range(args.rounds):
                order = chosen[number % len(chosen) :] + chosen[: number % len(chosen)]
                print(f"round {number + 1}: {', '.join(order)}", flush=True)
                for name in order:
                    variants[name]()
        finally:
            if bench.scheduler:
                bench.scheduler.stop()
        report(bench)


if __name__ == "__main__":
    main()
