"""A Delta table made by many small runs, before and after `python -m jobs maintain` (part of `make bench`).

    python -m benchmarks.maintenance [--runs 200] [--events 50]

clickstream, declared as a Delta table with `time_travel: 0`, takes `--runs` small runs
(each one file of `--events` events, 30 minutes of event time after the last: about four
days over 200 runs), all in one Spark session (a run as the tests run it: the same runner,
without a JVM start each). Then, before and after maintenance (OPTIMIZE of the closed
partitions, VACUUM): the data files in the table's newest version and in its folder, and a
full read of the table, best of 3, by Spark (every row aggregated) and by delta-rs (the
whole table into Arrow). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from datetime import UTC, datetime, timedelta

import yaml

from benchmarks.measure import REPO
from jobs import declare
from jobs.declare.load import pipelines_dir
from jobs.lake import delta, listings
from jobs.lake.landing import land_lines
from jobs.lake.layout import Locations

WORK = REPO / "data" / "bench" / "maintenance"
START = datetime(2023, 7, 30, tzinfo=UTC)


def declared() -> declare.PipelineBase:
    raw = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    raw["output"] = {"format": "delta", "partition_by": "window_date"}
    raw["retention"] = {"time_travel": 0}
    raw["rules"] = [r for r in raw["rules"] if r["on_violation"] != "fail"]
    return declare.from_mapping(raw)


def lines(run: int, events: int) -> list[str]:
    base = START + timedelta(minutes=30 * run)
    return [
        json.dumps(
            {
                "event_id": f"r{run}-{i}",
                "user_id": f"user{i % 20}",
                "event": "click",
                "eventtimestamp": (base + timedelta(seconds=30 * i / events)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            }
        )
        for i in range(events)
    ]


def best_of_3(read) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        read()
        times.append(time.perf_counter() - started)
    return min(times)


def read_by_spark(spark, output: str) -> None:
    from pyspark.sql import functions as F

    spark.read.format("delta").load(output).agg(F.sum("event_count"), F.count("*")).collect()


def read_by_delta_rs(output: str) -> None:
    delta.read_table(output).num_rows  # noqa: B018 - the read is what is timed


def figures(spark, output: str) -> dict[str, float]:
    return {
        "table files": len(delta.table_files(output)),
        "folder files": len(listings.list_files(output)),
        "spark read s": best_of_3(lambda: read_by_spark(spark, output)),
        "delta-rs read s": best_of_3(lambda: read_by_delta_rs(output)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--events", type=int, default=50)
    args = parser.parse_args()

    from jobs.request import RunRequest
    from jobs.run import runner
    from jobs.run.maintain import maintain
    from jobs.session import get_spark, table_conf

    shutil.rmtree(WORK, ignore_errors=True)
    pipeline = declared()
    locations = Locations.resolve(pipeline.name, root=str(WORK))
    spark = get_spark("benchmark-maintenance", {"spark.sql.shuffle.partitions": "2", **table_conf(["delta"])})
    started = time.monotonic()
    for run in range(args.runs):
        land_lines({f"run-{run:04d}.json": lines(run, args.events)}, locations.landing)
        report = runner.run(pipeline, RunRequest(pipeline.name, locations), spark=spark)
        if report.status != "succeeded":
            raise SystemExit(f"run {run}: {report.status}: {report.error}")
        if (run + 1) % 25 == 0:
            print(f"  {run + 1} runs, {time.monotonic() - started:.0f} s", flush=True)
    before = figures(spark, locations.output)
    upkeep = maintain(spark, pipeline, locations)
    after = figures(spark, locations.output)
    print(f"\nmaintenance of a Delta table made by {args.runs} small runs ({args.events} events each):")
    print("\n".join(upkeep.lines()))
    print(f"{'':18}{'before':>10}{'after':>10}")
    for key in before:
        print(f"{key:18}{before[key]:>10.3g}{after[key]:>10.3g}")
    spark.stop()


if __name__ == "__main__":
    main()
