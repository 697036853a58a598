"""window: watermarked event-time windows (tumbling or sliding), aggregated per key,
optionally deduplicated first (`dropDuplicatesWithinWatermark`).

Late rows: a stateful aggregation drops a row's contribution to a window that ended at
or before the watermark the batch drops rows with (the previous batch's, since Spark
3.4); a row is late when every window it falls in was dropped. Deduplication, when
declared, comes first and drops any row at or before that watermark, whole.

Backfill: a closed range gets no more events, so the windows still held in state are
final. They are read from the state store (Spark's `statestore` source) and their
aggregation buffers finalized, in the order of the declared aggregates (checked against
the state's schema, so a Spark change that moves them fails loudly):
    count -> [count]   sum -> [sum]   min -> [min]   max -> [max]   avg -> [sum, count]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.columns import EVENT_TIME
from jobs.declare import WindowPipeline
from jobs.declare.parts import Aggregate, Window
from jobs.flow.patterns.base import CannotBackfill, Pattern
from jobs.units import spark_duration

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

BUFFER_FIELDS = {"count": 1, "sum": 1, "min": 1, "max": 1, "avg": 2}


class WindowPattern(Pattern):
    pipeline: WindowPipeline

    @property
    def spark_counts(self) -> tuple[str, ...]:
        return ("duplicates_dropped",) if self.pipeline.deduplicate else ()

    def output_columns(self) -> list[str]:
        return ["window_start", "window_end", *self.pipeline.keys, *(a.name for a in self.pipeline.aggregates)]

    def describe(self) -> str:
        window = self.pipeline.window
        every = f"{window.duration_s}s windows" + ("" if window.is_tumbling else f" sliding every {window.slide_s}s")
        aggregates = ", ".join(f"{a.name}={a.function}({a.column or '*'})" for a in self.pipeline.aggregates)
        unique = f", each {'+'.join(self.pipeline.deduplicate)} once" if self.pipeline.deduplicate else ""
        return f"{aggregates} per {every}, keys [{', '.join(self.pipeline.keys)}]{unique}"

    @property
    def stateful_operators(self) -> int:
        return 2 if self.pipeline.deduplicate else 1

    @property
    def aggregation_operator(self) -> int:
        """The aggregation's stateful operator id: deduplication, when declared, comes first."""
        return self.stateful_operators - 1

    def contract(self) -> dict[str, Any]:
        pipeline = self.pipeline
        contract = super().contract() | {
            "window_duration_s": pipeline.window.duration_s,
            "window_slide_s": pipeline.window.slide_s,
            "keys": list(pipeline.keys),
            "aggregates": [a.model_dump() for a in pipeline.aggregates],
        }
        if pipeline.deduplicate:
            contract["deduplicate"] = list(pipeline.deduplicate)
        return contract

    def suite_values(self) -> dict[str, Any]:
        keys = list(self.pipeline.keys)
        window = self.pipeline.window
        return {
            "$window_s": window.duration_s,
            "$slide_s": window.slide_s,
            "$keys": keys,
            "$table_key": ["window_start", *keys],
        }

    def table(self, *events: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        pipeline = self.pipeline
        window = F.window(
            EVENT_TIME, spark_duration(pipeline.window.duration_s), spark_duration(pipeline.window.slide_s)
        )
        watermarked = events[0].withWatermark(EVENT_TIME, spark_duration(pipeline.watermark_s))
        if pipeline.deduplicate:
            # State per key lasts until the watermark passes its first event time + the delay.
            watermarked = watermarked.dropDuplicatesWithinWatermark(list(pipeline.deduplicate))
        aggregated = watermarked.groupBy(window.alias("window"), *pipeline.keys).agg(
            *(_aggregate(a) for a in pipeline.aggregates)
        )
        table = aggregated.select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            *pipeline.keys,
            *(a.name for a in pipeline.aggregates),
        )
        return self.with_partition(table, "window_start")

    def late_at(self, event_time: Column) -> Column:
        if self.pipeline.deduplicate:
            return event_time
        return latest_window_end(event_time, self.pipeline.window)

    def held_rows(self, spark: SparkSession, checkpoint: str, schema: StructType) -> DataFrame:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructField, StructType

        pipeline = self.pipeline
        state = spark.read.format("statestore").option("operatorId", self.aggregation_operator).load(checkpoint)
        buffers = state.schema["value"].dataType
        expected = sum(BUFFER_FIELDS[a.function] for a in pipeline.aggregates)
        if len(buffers.fields) != expected:
            raise CannotBackfill(
                f"the state of {checkpoint} holds {len(buffers.fields)} aggregation buffers {buffers.fieldNames()}, "
                f"not the {expected} that {[a.function for a in pipeline.aggregates]} need; this Spark version "
                "lays out aggregation state differently, so the last windows cannot be read"
            )
        # Buffer fields can share names (avg's sum and count beside sum and count): rename them
        # by position with a struct-to-struct cast, then read them by the new names.
        renamed = StructType([StructField(f"_buffer{i}", f.dataType, f.nullable) for i, f in enumerate(buffers)])
        flat = state.select(
            F.col("key.window.start").alias("window_start"),
            F.col("key.window.end").alias("window_end"),
            *(F.col(f"key.{key}").alias(key) for key in pipeline.keys),
            F.col("value").cast(renamed).alias("buffers"),
        ).select("window_start", "window_end", *pipeline.keys, "buffers.*")
        values, position = [], 0
        for aggregate in pipeline.aggregates:
            value = F.col(f"_buffer{position}")
            if aggregate.function == "avg":  # sum / count; no rows counted gives null, as avg does
                value = F.try_divide(value, F.col(f"_buffer{position + 1}"))
            values.append(value.cast(schema[aggregate.name].dataType).alias(aggregate.name))
            position += BUFFER_FIELDS[aggregate.function]
        table = flat.select("window_start", "window_end", *pipeline.keys, *values)
        return self.with_partition(table, "window_start").select(*schema.fieldNames())


def _aggregate(aggregate: Aggregate) -> Column:
    from pyspark.sql import functions as F

    if aggregate.function == "count":
        return F.count(F.lit(1)).alias(aggregate.name)
    return getattr(F, aggregate.function)(aggregate.column).alias(aggregate.name)


def latest_window_end(event_time: Column, window: Window) -> Column:
    """The end of the last window an event falls in (Spark's windows start at the epoch)."""
    from pyspark.sql import functions as F

    seconds = F.unix_micros(event_time) / F.lit(1_000_000)
    last_start = F.floor(seconds / window.slide_s) * window.slide_s
    return F.timestamp_seconds(last_start + window.duration_s)
