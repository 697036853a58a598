"""How long Great Expectations takes: import, and validating clickstream-shaped tables.

    .venv/bin/python -m benchmarks.validation [ROWS ...]   (default: 1000 100000 1000000)

Prints one line per size. Figures, not assertions: compare them between versions.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time


def main(sizes: list[int]) -> None:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    started = time.monotonic()
    import great_expectations  # noqa: F401

    print(f"import great_expectations: {time.monotonic() - started:.1f}s")

    from pyspark.sql import functions as F

    from jobs import declare
    from jobs.lake.layout import Locations, join, local_path
    from jobs.session import get_spark
    from jobs.validate.gx import run_checkpoint
    from jobs.validate.suite import load_suite
    from jobs.validate.validation import with_window_length

    spark = get_spark("benchmark-validation", {"spark.sql.shuffle.partitions": "4"})
    pipeline = declare.load("clickstream")
    suite = load_suite(pipeline)
    with tempfile.TemporaryDirectory() as root:
        locations = Locations.resolve(pipeline.name, root=root)
        site = local_path(join(locations.reports, "data_docs"))
        for rows in sizes:
            # Distinct (window_start, user_id) keys: 1000 users per minute.
            table = (
                spark.range(rows)
                .select(
                    F.timestamp_seconds(F.lit(1_690_704_000) + (F.col("id") / 1000).cast("long") * 60).alias(
                        "window_start"
                    ),
                    F.concat(F.lit("user"), (F.col("id") % 1000).cast("string")).alias("user_id"),
                    (F.col("id") % 7 + 1).alias("event_count"),
                )
                .withColumn("window_end", F.col("window_start") + F.expr("INTERVAL 1 MINUTE"))
                .transform(with_window_length)
                .cache()
            )
            table.count()
            started = time.monotonic()
            checks, _ = run_checkpoint(table, pipeline.name, suite, locations.quality, site, f"bench-{rows}", True)
            elapsed = time.monotonic() - started
            failed = [c.name for c in checks if c.success is False]
            print(
                f"validate {rows:>9,} rows: {elapsed:5.1f}s  ({len(checks)} expectations, failed: {failed or 'none'})"
            )
            table.unpersist()
    spark.stop()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 100_000, 1_000_000])
