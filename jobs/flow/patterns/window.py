"""window: watermarked event-time windows (tumbling or sliding), aggregated per key,
optionally deduplicated first (`dropDuplicatesWithinWatermark`).

Late rows: a stateful aggregation drops a row's contribution to a window that ended at
or before the watermark the batch drops rows with (the previous batch's, since Spark
3.4); a row is late when every window it falls in was dropped. Deduplication, when
declared, comes first and drops any row at or before that watermark, whole.

No aggregate can overflow, whatever the values: a sum of whole numbers (int, long) is
summed and written as decimal(38,0), which holds 10^19 values of the largest long (a range
check per value could not prevent it: two values in any range can overflow a long
together, and Spark's ANSI mode then fails the whole query); a sum over a double is a
double (at worst infinite, never an error); avg is a double. A sum over a field of
another type (a dimension's text column) takes what reads as a number, else null.

Backfill: a closed range gets no more events, so the windows still held in state are
final. They are read from the state store (Spark's `statestore` source) and their
aggregation buffers finalized, in the order of the declared aggregates (checked against
the state's schema, so a Spark change that moves them fails loudly):
    count -> [count]   sum -> [sum] (a decimal sum: [sum, isEmpty])   min -> [min]   max -> [max]
    avg -> [sum, count]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.columns import EVENT_TIME
from jobs.declare import WindowPipeline
from jobs.declare.computing import Aggregate, Window
from jobs.flow.patterns.base import CannotBackfill, Pattern, kept_only
from jobs.units import column_name, spark_duration

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from jobs.flow.tally import Tally

BUFFER_FIELDS = {"count": 1, "sum": 1, "min": 1, "max": 1, "avg": 2}
WHOLE = ("int", "integer", "long", "bigint")  # summed as decimal(38,0)
EXACT_SUM = "decimal(38,0)"


class WindowPattern(Pattern):
    pipeline: WindowPipeline

    @property
    def spark_counts(self) -> tuple[str, ...]:
        return ("duplicates_dropped",) if self.pipeline.deduplicate else ()

    def output_columns(self) -> list[str]:
        return ["window_start", "window_end", *self.key_columns, *(a.name for a in self.pipeline.aggregates)]

    @property
    def key_columns(self) -> list[str]:
        return [key.name for key in self.pipeline.keys]

    def describe(self) -> str:
        window = self.pipeline.window
        every = f"{window.duration_s}s windows" + ("" if window.is_tumbling else f" sliding every {window.slide_s}s")
        aggregates = ", ".join(map(str, self.pipeline.aggregates))
        unique = f", each {'+'.join(self.pipeline.deduplicate)} once" if self.pipeline.deduplicate else ""
        return f"{aggregates} per {every}, keys [{', '.join(map(str, self.pipeline.keys))}]{unique}"

    @property
    def stateful_operators(self) -> int:
        return 2 if self.pipeline.deduplicate else 1

    def contract(self) -> dict[str, Any]:
        pipeline = self.pipeline
        contract = super().contract() | {
            "window_duration_s": pipeline.window.duration_s,
            "window_slide_s": pipeline.window.slide_s,
            "keys": [str(key) for key in pipeline.keys],
            # Settings added since (expression, by, ...) only when set: older checkpoints still match.
            "aggregates": [
                {k: v for k, v in a.model_dump().items() if k in ("name", "function", "column") or v is not None}
                for a in pipeline.aggregates
            ],
        }
        if pipeline.deduplicate:
            contract["deduplicate"] = list(pipeline.deduplicate)
        if any(self._summed_as(a) == EXACT_SUM for a in pipeline.aggregates):
            # The sum's state changed type: a checkpoint of the long sum cannot resume.
            contract["whole_sums"] = EXACT_SUM
        return contract

    def held_paths(self) -> list[str]:
        # State: keyed by the keys (and the deduplicated fields), one buffer per aggregate of its column's type.
        pipeline = self.pipeline
        columns = [path for a in pipeline.aggregates if a.function != "count" for path in a.reads]
        return list(dict.fromkeys([*map(str, pipeline.keys), *columns, *map(str, pipeline.deduplicate)]))

    def _summed_as(self, aggregate: Aggregate) -> str | None:
        """What a sum or an average adds its values up as: a sum of whole numbers as
        decimal(38,0), anything else as doubles (text that reads as no number: null).
        None: not a sum or an average."""
        if aggregate.function not in ("sum", "avg"):
            return None
        kind = self.pipeline.source.kind_at(aggregate.column) or "string"
        return EXACT_SUM if kind in WHOLE and aggregate.function == "sum" else "double"

    def _aggregate(self, aggregate: Aggregate) -> Column:
        from pyspark.sql import functions as F

        from jobs.flow.fields import field

        if aggregate.expression is not None:
            return F.expr(aggregate.expression).alias(aggregate.name)
        if aggregate.function == "count":
            return F.count(F.lit(1)).alias(aggregate.name)
        value = field(aggregate.column)
        summed_as = self._summed_as(aggregate)
        if summed_as is not None:
            value = value.try_cast(summed_as)
        if aggregate.function in ("stddev", "variance"):
            value = value.try_cast("double")  # as avg reads them: what reads as no number is null
        function = getattr(F, aggregate.function)
        if aggregate.function == "approx_count_distinct" and aggregate.relative_error is not None:
            return function(value, rsd=aggregate.relative_error).alias(aggregate.name)
        if aggregate.function == "percentile_approx":
            return function(value, aggregate.percentage).alias(aggregate.name)
        if aggregate.by is not None:  # min_by, max_by
            return function(value, field(aggregate.by)).alias(aggregate.name)
        return function(value).alias(aggregate.name)

    def _buffer_fields(self, aggregate: Aggregate) -> int:
        return 2 if self._summed_as(aggregate) == EXACT_SUM else BUFFER_FIELDS[aggregate.function]

    @property
    def backfill_refusal(self) -> str | None:
        unread = [
            a.name for a in self.pipeline.aggregates if a.expression is not None or a.function not in BUFFER_FIELDS
        ]
        if unread:
            return (
                f"the last windows of aggregates {unread} cannot be read from state yet (only count, sum, avg, "
                "min and max): a closed range of this pipeline is not backfilled"
            )
        return None

    def suite_values(self) -> dict[str, Any]:
        keys = self.key_columns
        window = self.pipeline.window
        return {
            "$window_s": window.duration_s,
            "$slide_s": window.slide_s,
            "$keys": keys,
            "$table_key": ["window_start", *keys],
        }

    def table(self, *events: DataFrame, tally: Tally | None = None) -> DataFrame:
        from pyspark.sql import functions as F

        from jobs.flow.fields import field

        pipeline = self.pipeline
        window = F.window(
            EVENT_TIME, spark_duration(pipeline.window.duration_s), spark_duration(pipeline.window.slide_s)
        )
        watermarked = kept_only(events[0].withWatermark(EVENT_TIME, spark_duration(pipeline.watermark_s)), EVENT_TIME)
        if pipeline.deduplicate:
            # State per key lasts until the watermark passes its first event time + the delay.
            # Spark deduplicates on columns: a path is read into its column_name first.
            paths = {column_name(path): field(path) for path in pipeline.deduplicate if "." in path}
            watermarked = watermarked.withColumns(paths).dropDuplicatesWithinWatermark(
                [column_name(path) for path in pipeline.deduplicate]
            )
        keys = [field(key.path).alias(key.name) for key in pipeline.keys]
        aggregated = watermarked.groupBy(window.alias("window"), *keys).agg(
            *(self._aggregate(a) for a in pipeline.aggregates)
        )
        table = aggregated.select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            *self.key_columns,
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
        state = (
            spark.read.format("statestore")
            .option("operatorId", _aggregation_operator(spark, checkpoint))
            .load(checkpoint)
        )
        buffers = state.schema["value"].dataType
        expected = sum(self._buffer_fields(a) for a in pipeline.aggregates)
        if len(buffers.fields) != expected:
            raise CannotBackfill(
                f"the state of {checkpoint} holds {len(buffers.fields)} aggregation buffers {buffers.fieldNames()}, "
                f"not the {expected} that {[a.function for a in pipeline.aggregates]} need; this Spark version "
                "lays out aggregation state differently, so the last windows cannot be read"
            )
        # Buffer fields can share names (avg's sum and count beside sum and count): rename them
        # by position with a struct-to-struct cast, then read them by the new names.
        renamed = StructType([StructField(f"_buffer{i}", f.dataType, f.nullable) for i, f in enumerate(buffers)])
        # The state's key: the window, then the keys in their order, each read by its place (Spark
        # names a key read from a path `_groupingexpression`, not by the column it is aliased to).
        held_keys = state.schema["key"].dataType.fieldNames()[1:]
        flat = state.select(
            F.col("key.window.start").alias("window_start"),
            F.col("key.window.end").alias("window_end"),
            *(F.col(f"key.`{held}`").alias(key) for held, key in zip(held_keys, self.key_columns, strict=True)),
            F.col("value").cast(renamed).alias("buffers"),
        ).select("window_start", "window_end", *self.key_columns, "buffers.*")
        values, position = [], 0
        for aggregate in pipeline.aggregates:
            value = F.col(f"_buffer{position}")
            if aggregate.function == "avg":  # sum / count; no rows counted gives null, as avg does
                value = F.try_divide(value, F.col(f"_buffer{position + 1}"))
            elif self._buffer_fields(aggregate) == 2:  # a decimal sum of no value is null
                value = F.when(~F.col(f"_buffer{position + 1}"), value)
            values.append(value.cast(schema[aggregate.name].dataType).alias(aggregate.name))
            position += self._buffer_fields(aggregate)
        table = flat.select("window_start", "window_end", *self.key_columns, *values)
        return self.with_partition(table, "window_start").select(*schema.fieldNames())


def _aggregation_operator(spark: SparkSession, checkpoint: str) -> int:
    """The aggregation's stateful operator id, by its name in the checkpoint's state metadata:
    Spark numbers a query's operators as it plans them (a deduplication below the aggregation
    is operator 1 in Spark 4.2, not 0)."""
    operators = spark.read.format("state-metadata").load(checkpoint).select("operatorId", "operatorName").collect()
    named = [row.operatorId for row in operators if row.operatorName == "stateStoreSave"]
    if len(named) != 1:
        found = [(row.operatorId, row.operatorName) for row in operators]
        raise CannotBackfill(f"the state of {checkpoint} has not one aggregation among its operators {found}")
    return named[0]


def latest_window_end(event_time: Column, window: Window) -> Column:
    """The end of the last window an event falls in (Spark's windows start at the epoch)."""
    from pyspark.sql import functions as F

    seconds = F.unix_micros(event_time) / F.lit(1_000_000)
    last_start = F.floor(seconds / window.slide_s) * window.slide_s
    return F.timestamp_seconds(last_start + window.duration_s)
