"""What each step of the product's flow costs, next to Spark's JSON source (part of `make bench`).

    python -m benchmarks.stages DATA

Each step runs as a Spark batch job over the same landed files, written to Spark's `noop`
sink (every row computed, nothing stored), best of 3 in one session, so that the figures
differ only by the step added: read the lines; decode them strictly (in the JVM, as a run
does; and, beside it, the reference decoder in Spark's Python workers, the path runs took
before); parse (event time, reasons); count every row (the tally that spares accounting a
second read); check the declaration's row rules; and, for comparison, Spark's JSON source
with the same fields and the same event-time parse. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from jobs.declare.load import load
from jobs.flow.parse import decoded, parse_events, usable
from jobs.flow.query import usable_events
from jobs.flow.source import read_lines
from jobs.flow.tally import Tally, for_batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--memory", default="1g")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from benchmarks.references import SCHEMA
    from jobs.session import get_spark

    spark = get_spark("benchmark-stages", {"spark.driver.memory": args.memory, "spark.sql.shuffle.partitions": "4"})
    clickstream = load("clickstream")
    no_rules = clickstream.model_copy(update={"rules": ()})
    paths = [str(p) for p in sorted(args.data.glob("*.json"))]
    tally = Tally(spark)

    def lines():
        return read_lines(spark, paths)

    steps = {
        "read lines (text source)": lambda: lines(),
        "+ decode strictly (JVM)": lambda: decoded(lines(), clickstream.source),
        "+ decode strictly (Python workers)": lambda: _decoded_in_python(lines(), clickstream.source),
        "+ parse (event time, reasons)": lambda: usable(parse_events(lines(), clickstream.source)),
        "+ count every row (tally)": lambda: usable_events(no_rules, 0, lines(), None, tally),
        f"+ its {len(clickstream.rules)} row rules": lambda: usable_events(clickstream, 0, lines(), None, tally),
        "Spark's JSON source + same parse": lambda: (
            spark.read.schema(SCHEMA)
            .json(paths)
            .withColumn("t", F.try_to_timestamp("eventtimestamp"))
            .where("user_id IS NOT NULL AND t IS NOT NULL")
        ),
    }
    print(f"\nwhat each step costs ({len(paths)} files, batch jobs to Spark's noop sink, best of 3)")
    for name, frame in steps.items():
        best = min(_timed(spark, frame(), tally) for _ in range(3))
        print(f"  {name:34} {best:6.2f} s", flush=True)


def _decoded_in_python(lines, source):
    """The reference decoder in Spark's Python workers (mapInArrow): what runs did before
    the JVM's decoder."""
    from pyspark.sql import functions as F

    from jobs.columns import FILE_SIZE, LINE
    from tests.reference.decode import LineDecoder

    decoder = LineDecoder(tuple(source.fields.items()), max_depth=source.max_depth)
    others = [(f.name, f.dataType.simpleString()) for f in lines.schema.fields if f.name not in (LINE, FILE_SIZE)]
    schema = ", ".join(f"`{name}` {kind}" for name, kind in decoder.output_columns(others))
    return lines.withColumn(LINE, F.col(LINE).cast("binary")).mapInArrow(decoder, schema)


def _timed(spark, frame, tally: Tally) -> float:
    started = time.monotonic()
    with for_batch(spark, 0):
        frame.write.format("noop").mode("overwrite").save()
    tally.take(0)
    return time.monotonic() - started


if __name__ == "__main__":
    main()
