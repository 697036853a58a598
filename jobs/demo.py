"""The demo: a pipeline's sample data lands in a few arrivals, and the pipeline runs after each.

    python -m jobs.demo [--pipeline NAME] [--root ./data]

The samples (jobs/samples.py) include late records (behind the watermark when they
land) and records that must be quarantined. Files keep the same names on every demo
run, so running the demo again lands nothing new and writes nothing.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from jobs import samples, storage
from jobs import spec as specs
from jobs.inference import with_recorded_schema
from jobs.landing import land_lines
from jobs.storage import DEFAULT_ROOT, Locations
from jobs.suite import load_suite

SHOWN_ROWS = 30


def _cell(value) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def show_table(spark, spec: specs.PipelineSpec, locations: Locations) -> None:
    columns = with_recorded_schema(spec, locations).output_columns
    table = spark.read.parquet(locations.output).select(*columns).orderBy(*columns)
    rows = table.limit(SHOWN_ROWS).collect()
    total = table.count()
    more = f", the first {SHOWN_ROWS} shown" if total > SHOWN_ROWS else ""
    print(f"\n{locations.output}: {total} rows{more}")
    print("  " + "  ".join(f"{c:<20}" for c in columns))
    for row in rows:
        print("  " + "  ".join(f"{_cell(row[c]):<20}" for c in columns))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help="where the demo's data goes (default: %(default)s)")
    parser.add_argument(
        "--pipeline",
        default="clickstream",
        choices=sorted(samples.SAMPLES),
        help="the pipeline to show (default: %(default)s)",
    )
    args = parser.parse_args(argv)

    from jobs import dq_report, quality, runner
    from jobs.session import spark_for

    spec = specs.load(args.pipeline)
    suite = load_suite(spec)
    suite_path = f"expectations/{spec.name}.yaml"
    verdicts: list[str] = []
    locations = Locations.resolve(spec.name, root=args.root)
    spark = spark_for(locations, "jobs-demo", {"spark.sql.shuffle.partitions": str(spec.state_partitions)})
    totals = dict.fromkeys(
        ("input_rows", "aggregated_rows", "quarantined_rows", "late_rows_dropped", "duplicates_dropped", "output_rows"),
        0,
    )
    for name, text in samples.DIMENSIONS.get(spec.name, {}).items():
        uri = storage.join(locations.dimensions, name)
        if not storage.exists(uri):  # a dimension edited by hand is left as it is
            storage.write_text(uri, text)
            print(f"dimension table: wrote {uri}")
    for number, files in enumerate(samples.arrivals(spec.name), start=1):
        # Files landed by an earlier demo run are left alone: rerunning adds nothing.
        landed = land_lines(files, locations.landing, skip_existing=True)
        names = ", ".join(Path(p).name for p in landed) or "nothing new (landed by an earlier demo run)"
        print(f"\n=== arrival {number}: landed {names}")
        report = runner.run(spec, locations, spark=spark)
        verdicts.append(quality.validate_run(spark, spec, locations, report.to_dict(), suite).status)
        for key in totals:
            totals[key] += getattr(report, key) or 0
    show_table(spark, spec, locations)
    print(
        "\nthis demo run: {input_rows} input rows = {aggregated_rows} aggregated + {quarantined_rows} quarantined "
        "+ {late_rows_dropped} late + {duplicates_dropped} duplicates; {output_rows} rows written".format(**totals)
    )
    print(f"quarantine: {locations.quarantine}   run reports: {locations.runs}")
    if spec.window:
        print("windows still open (not yet past the watermark) stay in state until later events arrive.")
    print(
        f"validation (Great Expectations, {suite_path}): "
        + ", ".join(f"run {n} {v}" for n, v in enumerate(verdicts, start=1))
    )
    page = dq_report.build(args.root)
    print(f"data quality report: {page}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
