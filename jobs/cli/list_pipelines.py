"""`python -m jobs list`: the declared pipelines, one name per line, or described (-v)."""

from __future__ import annotations

import argparse

from jobs import declare
from jobs.declare.load import pipelines_dir
from jobs.exit_codes import ExitCode
from jobs.history import freshness
from jobs.units import ON_ARRIVAL, ON_UPSTREAM, duration_words
from jobs.validate.suite import load_suite


def add_parser(commands) -> None:
    listing = commands.add_parser("list", help="the declared pipelines, one name per line")
    listing.add_argument("--verbose", "-v", action="store_true", help="describe each pipeline")
    listing.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Every pipeline that loads, then what is wrong with each that does not (exit 2)."""
    loaded = declare.load_each()
    problems = list(loaded.problems)
    for name, pipeline in loaded.pipelines.items():
        try:
            suite = load_suite(pipeline)  # a table without a valid suite is a broken declaration
        except declare.DeclarationError as error:
            problems.extend(error.problems)
            continue
        if args.verbose:
            _describe(pipeline, suite)
            readers = [p.name for p in loaded.pipelines.values() if p.source.table == name]
            if readers:  # the graph, from this table on (docs/graph.md)
                print(f"  read by    {', '.join(readers)}")
        else:
            print(name)
    if problems:
        raise declare.DeclarationError("; ".join(problems), problems)
    if not loaded.pipelines:
        print(f"no pipelines are declared in {pipelines_dir()}: each is a <name>.yaml file there (docs/declaring.md)")
    return ExitCode.OK


def _describe_computed(computed, of: str) -> None:
    """Each computed column and the filter, as declared (of a join's second source: `of`)."""
    for number, (name, expression) in enumerate(computed.columns.items()):
        print(f"  {'columns' if number == 0 else '':10} {name} = {expression}{of if number == 0 else ''}")
    if computed.where:
        print(f"  {'where':10} {computed.where}{of}  (other rows are filtered, and counted)")


def _describe(pipeline: declare.PipelineBase, suite) -> None:
    from jobs.flow.patterns import pattern_of

    source = pipeline.source
    fields = "inferred by the first run" if source.infer_schema else f"{len(source.fields)} fields"
    if source.table:  # another pipeline's table (docs/graph.md)
        fields = f"table {source.table}, its schema recorded by the first run"
    severities = [e.severity for e in suite.expectations]
    run_checks = [c for c in (suite.run_checks.rows_balance, suite.run_checks.quarantine_share) if c]
    watermark = f"{pipeline.watermark_s}s" if pipeline.watermark_s else "none (no state kept by event time)"
    print(f"{pipeline.name}: {pipeline.description}")
    print(f"  pattern    {pipeline.pattern}")
    kind = "" if source.table else f"{source.format}, "
    print(f"  source     {kind}{fields}, event time {source.event_time.column}")
    print(f"  computes   {pattern_of(pipeline).describe()}")
    print(f"  watermark  {watermark}")
    for number, rule in enumerate(pipeline.rules):
        print(f"  {'rules' if number == 0 else '':10} {rule.name} ({rule.on_violation}): {rule.check}")
    _describe_computed(pipeline, "")
    if getattr(pipeline, "join", None) is not None:
        _describe_computed(pipeline.join, f" of {pipeline.join.source.name}")
    if pipeline.transform:  # named only: listing imports no team's code
        print(f"  transform  {pipeline.transform}, after `where` (docs/python.md)")
    print(f"  output     {pipeline.output.format}, partitioned by {pipeline.output.partition_by or 'nothing'}")
    schedule = pipeline.schedule or "none"
    if schedule == ON_ARRIVAL:
        arrival = pipeline.on_arrival
        schedule += (
            f" (quiet {duration_words(arrival.quiet_period_s)}, at least every "
            f"{duration_words(arrival.at_least_every_s)}{', S3 notifications' if arrival.queue else ''})"
        )
    if schedule == ON_UPSTREAM:
        schedule += f" (when table {pipeline.source.table} gets rows)"
    print(f"  schedule   {schedule}{f', group {pipeline.group}' if pipeline.group else ''}")
    kept = pipeline.retention
    landed = (
        "kept" if kept.landed == "keep" else f"{kept.landed}d {duration_words(kept.landed_after_s)} after accounting"
    )
    output = duration_words(kept.output_after_s) if kept.output_after_s else "kept"
    print(f"  retention  landed files {landed}; output files {output}")
    fresh = freshness.limit_said(*freshness.limit_of(pipeline), say=lambda s: duration_words(round(s)))
    judged = pipeline.quality
    anomalies = "off" if judged.anomalies == "off" else f"{judged.anomalies}, judged from {judged.min_runs} runs"
    print(f"  quality    freshness {fresh}; anomalies {anomalies}")
    print(
        f"  checks     {len(severities)} expectations ({severities.count('fail')} fail, "
        f"{severities.count('warn')} warn), {len(run_checks)} run report checks"
    )
