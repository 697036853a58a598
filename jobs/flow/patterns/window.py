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
final. Spark closes them itself, whatever they aggregate: one more batch, reading nothing,
runs with a watermark past the end of every window an event of the range falls in
(`closing_watermark_ms`, planned by jobs/backfill/stage.py), and evicts them all to the sink.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.columns import EVENT_TIME
from jobs.declare import WindowPipeline
from jobs.declare.computing import Aggregate, Window
from jobs.flow.patterns.base import Pattern, prepared
from jobs.units import column_name, spark_duration

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from jobs.flow.tally import Tally

WHOLE = ("int", "integer", "long", "bigint", "smallint", "tinyint")  # summed as decimal(38,0)
EXACT_SUM = "decimal(38,0)"


class WindowPattern(Pattern):
    output_follows_input = False  # released by the watermark or timers
    pipeline: WindowPipeline

    @property
    def spark_counts(self) -> tuple[str, ...]:
        return ("duplicates_dropped",) if self.pipeline.deduplicate else ()

    def output_columns(self) -> list[str]:
        return ["window_start", "window_end", *self.key_columns, *(a.name for a in self.pipeline.aggregates)]

    @property
    def key_columns(self) -> list[str]:
        return [key.name for key in self.pipeline.keys]

    def keys(self, index: int) -> list[str]:
        return [] if self.transforms(index) else [str(key.path) for key in self.pipeline.keys]

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

    def _summed_as(self, aggregate: Aggregate, events: DataFrame | None = None) -> str | None:
        """What a sum or an average adds its values up as: a sum of whole numbers as
        decimal(38,0), anything else as doubles (text that reads as no number: null).
        None: not a sum or an average. A computed column's type is Spark's, from `events`."""
        if aggregate.function not in ("sum", "avg"):
            return None
        kind = self.pipeline.source.kind_at(aggregate.column) or "string"
        if events is not None and aggregate.column in self.pipeline.columns:
            kind = events.schema[aggregate.column].dataType.simpleString()
        return EXACT_SUM if kind in WHOLE and aggregate.function == "sum" else "double"

    def _aggregate(self, aggregate: Aggregate, events: DataFrame) -> Column:
        from pyspark.sql import functions as F

        from jobs.flow.fields import field

        if aggregate.expression is not None:
            return F.expr(aggregate.expression).alias(aggregate.name)
        if aggregate.function == "count":
            return F.count(F.lit(1)).alias(aggregate.name)
        value = field(aggregate.column)
        summed_as = self._summed_as(aggregate, events)
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

    def closing_watermark_ms(self, watermark_ms: int) -> int:
        # An event is at most the delay past the watermark, and its last window ends at most
        # one duration after it.
        return watermark_ms + (self.pipeline.watermark_s + self.pipeline.window.duration_s) * 1000

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
        watermarked = events[0].withWatermark(EVENT_TIME, spark_duration(pipeline.watermark_s))
        watermarked = prepared(self, watermarked, EVENT_TIME, tally)
        if pipeline.deduplicate:
            # State per key lasts until the watermark passes its first event time + the delay.
            # Spark deduplicates on columns: a path is read into its column_name first.
            paths = {column_name(path): field(path) for path in pipeline.deduplicate if "." in path}
            watermarked = watermarked.withColumns(paths).dropDuplicatesWithinWatermark(
                [column_name(path) for path in pipeline.deduplicate]
            )
        keys = [field(key.path).alias(key.name) for key in pipeline.keys]
        aggregated = watermarked.groupBy(window.alias("window"), *keys).agg(
            *(self._aggregate(a, watermarked) for a in pipeline.aggregates)
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


def latest_window_end(event_time: Column, window: Window) -> Column:
    """The end of the last window an event falls in (Spark's windows start at the epoch)."""
    from pyspark.sql import functions as F

    seconds = F.unix_micros(event_time) / F.lit(1_000_000)
    last_start = F.floor(seconds / window.slide_s) * window.slide_s
    return F.timestamp_seconds(last_start + window.duration_s)
