"""What the product is measured against: the same query written as plainly as each system allows.

    python -m benchmarks.references stream|stream-text|batch|duckdb|stream-github DATA OUTPUT
        [--max-bytes N] [--conf KEY=VALUE ...] [--resume] [--expressions]

The query: events with a user and a readable time, counted per user in 1-minute windows of
event time, written to Parquet. The streaming ones add a 5-minute watermark and run with
availableNow (append mode), as the product does; the batch ones see every event at once.
`stream-github` is github_activity's query (benchmarks/github_data.py): nested events with
the same schema, each id once within the watermark, events and pushed commits per type and
repository in 1-minute windows. `--expressions` makes the streams' query the one of
clickstream declared with expressions (benchmarks/scale.py `_with_expressions`): two
computed columns, a filter, the key over one of them and a distinct count over the other.
Each prints one line of JSON with the rows it read and wrote.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

SCHEMA = "event_id string, user_id string, event string, eventtimestamp string"
GITHUB_SCHEMA = (
    "id string, type string, actor struct<id:bigint,login:string>, repo struct<id:bigint,name:string>, "
    "payload struct<size:bigint,commits:array<struct<sha:string,message:string>>>, created_at string"
)


def _spark(memory: str, conf: dict[str, str] | None = None):
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("benchmark-reference")
        .config("spark.driver.memory", memory)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _counted(events):
    from pyspark.sql import functions as F

    usable = events.withColumn("t", F.try_to_timestamp("eventtimestamp")).where("user_id IS NOT NULL AND t IS NOT NULL")
    return (
        usable,
        lambda frame: (
            frame.groupBy(F.window("t", "1 minute"), "user_id")
            .count()
            .select(
                F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "user_id", "count"
            )
        ),
    )


def _with_expressions(events):
    """_counted's query with benchmarks/scale.py's expressions, written in DataFrame calls."""
    from pyspark.sql import functions as F

    usable = events.withColumn("t", F.try_to_timestamp("eventtimestamp")).where("user_id IS NOT NULL AND t IS NOT NULL")
    usable = usable.withColumn("user", F.lower("user_id")).withColumn("kind", F.upper("event"))
    return (
        usable,
        lambda frame: (
            frame.where("event <> 'scroll'")
            .groupBy(F.window("t", "1 minute"), "user")
            .agg(F.count(F.lit(1)).alias("event_count"), F.approx_count_distinct("kind").alias("kinds"))
            .select(
                F.col("window.start").alias("window_start"),
                F.col("window.end").alias("window_end"),
                "user",
                "event_count",
                "kinds",
            )
        ),
    )


def stream(
    data: Path,
    output: Path,
    memory: str,
    max_bytes: int | None,
    text: bool,
    conf: dict[str, str] | None = None,
    expressions: bool = False,
) -> dict:
    """A minimal availableNow stream: the JSON source (or text + from_json), a watermark, windows, Parquet."""
    from pyspark.sql import functions as F

    spark = _spark(memory, conf)
    reader = spark.readStream.option("maxBytesPerTrigger", max_bytes) if max_bytes else spark.readStream
    if text:
        lines = reader.format("text").load(str(data))
        events = lines.select(F.from_json("value", SCHEMA).alias("e")).select("e.*")
    else:
        events = reader.format("json").schema(SCHEMA).load(str(data))
    usable, count = (_with_expressions if expressions else _counted)(events)
    return _appended(count(usable.withWatermark("t", "5 minutes")), output)


def stream_github(data: Path, output: Path, memory: str, max_bytes: int | None) -> dict:
    """github_activity as a minimal availableNow stream: the JSON source with the nested
    schema, a watermark, each id once, windows per type and repository, Parquet."""
    from pyspark.sql import functions as F

    spark = _spark(memory)
    reader = spark.readStream.option("maxBytesPerTrigger", max_bytes) if max_bytes else spark.readStream
    events = reader.format("json").schema(GITHUB_SCHEMA).load(str(data))
    usable = events.withColumn("t", F.try_to_timestamp("created_at")).where(
        "id IS NOT NULL AND type IS NOT NULL AND repo.name IS NOT NULL AND t IS NOT NULL"
    )
    counted = (
        usable.withWatermark("t", "5 minutes")
        .dropDuplicatesWithinWatermark(["id"])
        .groupBy(F.window("t", "1 minute"), "type", F.col("repo.name").alias("repo_name"))
        .agg(F.count("*").alias("events"), F.sum(F.col("payload.size").cast("decimal(38,0)")).alias("commits"))
        .select(F.col("window.start").alias("window_start"), "type", "repo_name", "events", "commits")
    )
    return _appended(counted, output)


def _appended(table, output: Path) -> dict:
    """Append `table` to Parquet under `output` with availableNow; the rows read and written."""
    query = (
        table.writeStream.format("parquet")
        .option("path", str(output / "table"))
        .option("checkpointLocation", str(output / "checkpoint"))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    batches = [p for p in query.recentProgress if p.numInputRows]
    written = table.sparkSession.read.parquet(str(output / "table")).count()
    return {"input_rows": sum(p.numInputRows for p in batches), "batches": len(batches), "output_rows": written}


def batch(data: Path, output: Path, memory: str) -> dict:
    """A Spark batch job: every event at once, no watermark."""
    spark = _spark(memory)
    usable, count = _counted(spark.read.schema(SCHEMA).json(str(data)))
    count(usable).write.mode("overwrite").parquet(str(output / "table"))
    return {"output_rows": spark.read.parquet(str(output / "table")).count()}


def duckdb(data: Path, output: Path) -> dict:
    """DuckDB: one SQL statement over the files, bad lines skipped."""
    import duckdb

    columns = "{'event_id': 'VARCHAR', 'user_id': 'VARCHAR', 'event': 'VARCHAR', 'eventtimestamp': 'VARCHAR'}"
    connection = duckdb.connect()
    connection.execute("SET threads TO 2")
    connection.execute(
        f"""
        COPY (
            SELECT time_bucket(INTERVAL 1 MINUTE, t) AS window_start, user_id, count(*) AS count
            FROM (
                SELECT user_id, TRY_CAST(eventtimestamp AS TIMESTAMPTZ) AS t
                FROM read_json('{data}/*.json', format = 'newline_delimited', columns = {columns}, ignore_errors = true)
            )
            WHERE user_id IS NOT NULL AND t IS NOT NULL
            GROUP BY ALL
        ) TO '{output}/table.parquet' (FORMAT parquet)
        """
    )
    return {"output_rows": connection.execute(f"SELECT count(*) FROM '{output}/table.parquet'").fetchone()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("system", choices=("stream", "stream-text", "batch", "duckdb", "stream-github"))
    parser.add_argument("data", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--memory", default="1g", help="driver memory of the Spark ones")
    parser.add_argument("--max-bytes", type=int, help="maxBytesPerTrigger of the streaming ones")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting of the streams"
    )
    parser.add_argument("--resume", action="store_true", help="a stream goes on from its checkpoint in OUTPUT")
    parser.add_argument("--expressions", action="store_true", help="the streams' query with the declared expressions")
    args = parser.parse_args()
    if not args.resume:
        shutil.rmtree(args.output, ignore_errors=True)
    args.output.mkdir(parents=True, exist_ok=True)
    if args.system in ("stream", "stream-text"):
        conf = dict(setting.split("=", 1) for setting in args.conf)
        text = args.system == "stream-text"
        result = stream(args.data, args.output, args.memory, args.max_bytes, text, conf, args.expressions)
    elif args.system == "stream-github":
        result = stream_github(args.data, args.output, args.memory, args.max_bytes)
    elif args.system == "batch":
        result = batch(args.data, args.output, args.memory)
    else:
        result = duckdb(args.data, args.output)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
