"""The demo: sample clickstream events land in four arrivals, and the pipeline runs after each.

    python -m jobs.demo [--root ./data]

Arrivals include late events (behind the watermark when they land), malformed lines,
records without a user, an unparseable timestamp, an empty file and a file with only
bad lines. Files keep the same names on every demo run, so running the demo again
lands nothing new and writes nothing: the table stays as it was.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from jobs import spec as specs
from jobs.landing import land_lines
from jobs.storage import DEFAULT_ROOT, Locations
from jobs.suite import load_suite

START = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)
USERS = ["user1", "user2", "user3", "user4"]
EVENTS = ["click", "view", "scroll", "purchase"]


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _events(rng: random.Random, first_id: int, start: datetime, minutes: int, count: int) -> list[str]:
    moments = sorted(start + timedelta(seconds=rng.randrange(minutes * 60)) for _ in range(count))
    return [
        json.dumps(
            {
                "event_id": f"e-{first_id + i}",
                "user_id": rng.choice(USERS),
                "event": rng.choice(EVENTS),
                "eventtimestamp": _iso(moment),
                "page": f"/p/{rng.randrange(20)}",  # an extra field: allowed and ignored
            }
        )
        for i, moment in enumerate(moments)
    ]


def clickstream_arrivals(seed: int = 7) -> list[dict[str, list[str]]]:
    """Four arrivals, each a few files of newline-delimited JSON lines."""
    rng = random.Random(seed)
    late = [  # behind the watermark by the time they land in arrival 3
        json.dumps(
            {"event_id": "late-1", "user_id": "user1", "event": "click", "eventtimestamp": "2023-07-30T10:01:10Z"}
        ),
        json.dumps(
            {"event_id": "late-2", "user_id": "user1", "event": "view", "eventtimestamp": "2023-07-30T10:01:50Z"}
        ),
        json.dumps(
            {"event_id": "late-3", "user_id": "user2", "event": "click", "eventtimestamp": "2023-07-30T10:02:30Z"}
        ),
    ]
    bad = [
        '{"event_id": "bad-1", "user_id": "user3", "event": "click", "eventtimestamp": ',  # cut off
        json.dumps({"event_id": "bad-2", "event": "click", "eventtimestamp": "2023-07-30T10:06:00Z"}),  # no user
        json.dumps({"event_id": "bad-3", "user_id": "user4", "event": "click", "eventtimestamp": "30/07/2023 10:06"}),
    ]
    # Offsets (+02:00) are accepted: this is 10:07:30 UTC.
    offset_event = json.dumps(
        {"event_id": "tz-1", "user_id": "user2", "event": "view", "eventtimestamp": "2023-07-30T12:07:30+02:00"}
    )
    return [
        {"arrival-1-a.json": _events(rng, 1, START, 4, 40), "arrival-1-b.json": _events(rng, 100, START, 4, 20)},
        {"arrival-2-a.json": [*_events(rng, 200, START + timedelta(minutes=4), 5, 40), bad[0], offset_event]},
        {
            "arrival-3-a.json": [*_events(rng, 300, START + timedelta(minutes=9), 5, 40), *late, bad[1]],
            "arrival-3-empty.json": [],
        },
        {
            "arrival-4-a.json": _events(rng, 400, START + timedelta(minutes=14), 6, 40),
            "arrival-4-only-bad.json": [bad[2], "not json at all"],
        },
    ]


def show_table(spark, spec: specs.PipelineSpec, locations: Locations) -> None:
    columns = spec.output_columns
    table = spark.read.parquet(locations.output).orderBy("window_start", *spec.keys).select(*columns)
    rows = table.collect()
    print(f"\n{locations.output}: {len(rows)} windows")
    print("  " + "  ".join(f"{c:<20}" for c in columns))
    for row in rows:
        cells = [row[c].strftime("%Y-%m-%d %H:%M") if isinstance(row[c], datetime) else str(row[c]) for c in columns]
        print("  " + "  ".join(f"{cell:<20}" for cell in cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help="where the demo's data goes (default: %(default)s)")
    parser.add_argument("--pipeline", default="clickstream", choices=["clickstream"], help="the pipeline to show")
    args = parser.parse_args(argv)

    from jobs import dq_report, quality, runner
    from jobs.session import spark_for

    spec = specs.load(args.pipeline)
    suite = load_suite(spec)
    suite_path = f"expectations/{spec.name}.yaml"
    verdicts: list[str] = []
    locations = Locations.resolve(spec.name, root=args.root)
    spark = spark_for(locations, "jobs-demo", {"spark.sql.shuffle.partitions": str(spec.state_partitions)})
    totals = {"input_rows": 0, "aggregated_rows": 0, "quarantined_rows": 0, "late_rows_dropped": 0, "output_rows": 0}
    for number, files in enumerate(clickstream_arrivals(), start=1):
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
        "+ {late_rows_dropped} late; {output_rows} window rows written".format(**totals)
    )
    print(f"quarantine: {locations.quarantine}   run reports: {locations.runs}")
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
