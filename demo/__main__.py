"""The demo: a pipeline's sample data lands in a few arrivals, and the pipeline runs after each.

    python -m demo [--pipeline NAME] [--root ./data]      (make demo [PIPELINE=NAME])

By default it shows clickstream (a Parquet table), then rack_temperatures (a Delta table,
read back by delta-rs too, without Spark).

The samples (demo/samples.py) include late records (behind the watermark when they
land) and records that must be quarantined. Files keep the same names on every demo
run, so running the demo again lands nothing new and writes nothing.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from demo import samples
from jobs import declare
from jobs.accounting.ledger import Ledger, with_recorded_schema
from jobs.flow.patterns import pattern_of
from jobs.lake import fs
from jobs.lake.landing import land_lines
from jobs.lake.layout import DEFAULT_ROOT, Locations, join
from jobs.run.report import RunReport
from jobs.validate.suite import load_suite

SHOWN_ROWS = 30


def _cell(value) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def show_table(spark, pipeline: declare.PipelineBase, locations: Locations) -> None:
    columns = pattern_of(with_recorded_schema(pipeline, Ledger(locations.ledger))).output_columns()
    from jobs.flow.sink import read_table

    table = read_table(spark, locations.output).select(*columns).orderBy(*columns)
    rows = table.limit(SHOWN_ROWS).collect()
    total = table.count()
    more = f", the first {SHOWN_ROWS} shown" if total > SHOWN_ROWS else ""
    print(f"\n{locations.output}: {total} rows{more}")
    print("  " + "  ".join(f"{c:<20}" for c in columns))
    for row in rows:
        print("  " + "  ".join(f"{_cell(row[c]):<20}" for c in columns))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help="where the demo's data goes (default: %(default)s)")
    parser.add_argument(
        "--pipeline",
        choices=sorted(samples.SAMPLES),
        help=f"the pipeline to show (default: {' then '.join(DEFAULT_PIPELINES)})",
    )
    args = parser.parse_args(argv)

    from jobs.cli.logs import logs_on_stdout
    from jobs.quality_report import page as quality_report
    from jobs.run.application import Application

    pipelines = [declare.load(name) for name in ([args.pipeline] if args.pipeline else DEFAULT_PIPELINES)]
    with logs_on_stdout():
        located = [Locations.resolve(p.name, root=args.root) for p in pipelines]
        spark = Application.for_command("jobs-demo", pipelines, located).session()
        for pipeline in pipelines:
            _show(spark, pipeline, args.root)
        print(f"\ndata quality report: {quality_report.build(args.root)}")
        spark.stop()
    return 0


# A Parquet table, then a Delta one.
DEFAULT_PIPELINES = ("clickstream", "rack_temperatures")


def _show(spark, pipeline: declare.PipelineBase, root: str) -> None:
    """Land the samples arrival by arrival, run and validate after each, then show the table."""
    from jobs.validate.validation import validate_run

    print(f"\n##### {pipeline.name}: {pipeline.description} ({pipeline.output.format} table)")
    suite = load_suite(pipeline)
    suite_path = f"expectations/{pipeline.name}.yaml"
    verdicts: list[str] = []
    locations = Locations.resolve(pipeline.name, root=root)
    spark.conf.set("spark.sql.shuffle.partitions", str(pipeline.state_partitions))
    totals = dict.fromkeys(
        ("input_rows", "used_rows", "quarantined_rows", "late_rows_dropped", "duplicates_dropped", "output_rows"), 0
    )
    violations: dict[str, int] = {}  # rule -> rows that broke it, in committed batches
    stops: dict[str, int] = {}  # fail rule -> runs it stopped
    for name, text in samples.DIMENSIONS.get(pipeline.name, {}).items():
        uri = join(locations.dimensions, name)
        if not fs.exists(uri):  # a dimension edited by hand is left as it is
            fs.write_text(uri, text)
            print(f"dimension table: wrote {uri}")
    for number, files in enumerate(samples.arrivals(pipeline.name), start=1):
        # Files landed by an earlier demo run are left alone: rerunning adds nothing.
        landed = land_lines(files, locations.landing, skip_existing=True)
        names = ", ".join(Path(p).name for p in landed) or "nothing new (landed by an earlier demo run)"
        print(f"\n=== arrival {number}: landed {names}")
        report, stopped = _run_past_fail_rules(pipeline, locations, spark)
        for rule in stopped:
            stops[rule] = stops.get(rule, 0) + 1
        for name, count in report.rules.items():
            violations[name] = violations.get(name, 0) + count.violations
        verdicts.append(validate_run(spark, pipeline, locations, report, suite).status)
        for key in totals:
            totals[key] += getattr(report, key) or 0
    show_table(spark, pipeline, locations)
    print(
        "\nthis demo run: {input_rows} input rows = {used_rows} used + {quarantined_rows} quarantined "
        "+ {late_rows_dropped} late + {duplicates_dropped} duplicates; {output_rows} rows written".format(**totals)
    )
    if pipeline.rules:
        outcome = {"warn": "kept and counted", "quarantine": "quarantined", "fail": "stopped the run"}
        print(
            "rules: "
            + ", ".join(
                f"{rule.name} ({rule.on_violation}) {stops.get(rule.name, 0) if rule.on_violation == 'fail' else violations.get(rule.name, 0)} "
                f"{outcome[rule.on_violation]}"
                for rule in pipeline.rules
            )
        )
    print(f"quarantine: {locations.quarantine}   run reports: {locations.runs}")
    if pipeline.watermark_s and pattern_of(pipeline).stateful_operators:
        print("what the watermark has not passed yet (open windows, sessions, unmatched events) stays in state.")
    print(
        f"validation (Great Expectations, {suite_path}): "
        + ", ".join(f"run {n} {v}" for n, v in enumerate(verdicts, start=1))
    )
    if pipeline.output.format == "delta":
        _read_outside_spark(locations.output)


def _read_outside_spark(output: str) -> None:
    """A Delta table as a reader without Spark sees it (delta-rs, the `deltalake` package)."""
    from jobs.lake.delta import arrow_dataset, read_outside_spark

    table = read_outside_spark(output)
    rows = arrow_dataset(table, output).count_rows()
    print(f"read outside Spark (delta-rs): {rows} rows, version {table.version()} of {output}")


def _run_past_fail_rules(pipeline: declare.PipelineBase, locations: Locations, spark) -> tuple[RunReport, list[str]]:
    """Run the pipeline; when a `fail` rule stops it, quarantine the file it names (what its
    error says to do) and run again. Returns the run's report and the rules that stopped it."""
    from jobs.accounting.quarantine_file import quarantine_file
    from jobs.request import RunRequest
    from jobs.run import runner
    from jobs.run.failure import rule_failure

    stopped = []
    while True:
        try:
            return runner.run(pipeline, RunRequest(pipeline.name, locations), spark=spark), stopped
        except runner.RunFailed as failed:
            broken = rule_failure(str(failed))
            if broken is None or broken.rule in stopped:
                raise
            stopped.append(broken.rule)
            print(
                f"\nthe run stopped: rule {broken.rule} (on_violation: fail) is broken by {broken.file} line {broken.line}"
            )
            reason = f"broke rule {broken.rule}; quarantined by the demo"
            quarantine_file(pipeline, locations, broken.file, reason)
            print(
                f"the way past, as the error says: python -m jobs quarantine-file {pipeline.name} {broken.file} --reason '{reason}'; then run again"
            )


if __name__ == "__main__":
    raise SystemExit(main())
