"""join: right events matched to left events of the same key at most `within` earlier,
each side watermarked so that Spark can forget events no future event can match. With
`left_outer`, a left event that never matched is written with nulls once it is forgotten.

Each side lands in a folder of its own (<landing>/<source name>/); the left is the
checkpoint's sources/0. Late rows: a join does no partial aggregation first, so Spark's
own count of the input rows it dropped is exact; it is recorded from each batch's progress.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.columns import EVENT_TIME, KEPT, SOURCE_FILE
from jobs.declare import JoinPipeline
from jobs.declare.parts import Source
from jobs.flow.patterns.base import Pattern, kept_only, prepared
from jobs.units import column_name, spark_duration

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from jobs.flow.tally import Tally


class JoinPattern(Pattern):
    output_follows_input = False  # released by the watermark or timers
    pipeline: JoinPipeline
    writes_events = True
    spark_counts = ("late_rows_dropped",)

    def output_columns(self) -> list[str]:
        left, right = self.sources
        computed = [*self.pipeline.columns, *self.pipeline.join.columns]
        return [*_columns(left), *_columns(right, self._key_root), *computed]

    @property
    def _key_root(self) -> str:
        """The right side's field that holds the key, left out of the output (the left's is kept)."""
        return self.pipeline.join.key.split(".")[0]

    def keys(self, index: int) -> list[str]:
        return [] if self.transforms(index) else [self.pipeline.join.key]

    def describe(self) -> str:
        join, right = self.pipeline.join, self.pipeline.join.source
        side = f"{right.format} from <landing>/{right.name}/, {len(right.fields)} fields, event time {right.event_time.column}"
        return (
            f"{join.how} join with {side} on {join.key}, within {join.within_s}s after, "
            f"its watermark {join.watermark_s}s"
        )

    @property
    def stateful_operators(self) -> int:
        return 1

    def contract(self) -> dict[str, Any]:
        join = self.pipeline.join
        contract = super().contract() | {"join": {"source": join.source.name, "key": join.key, "how": join.how}}
        return contract | ({"join_computed": dict(sorted(join.columns.items()))} if join.columns else {})

    def held_paths(self) -> list[str]:
        # The join keeps each side's events in state, every field and computed column, until
        # the watermark passes (the second side's computed columns: `join_computed`).
        fields = [name for source in self.sources for name in source.fields]
        return list(dict.fromkeys([*fields, *self.pipeline.columns]))

    @property
    def backfill_refusal(self) -> str | None:
        return (
            "a range leaves unmatched events in the join's state, and nothing finalizes them: "
            f"to make its table again from every file, `python -m jobs rebuild {self.pipeline.name}` "
            "(docs/changes.md); for a range on its own, a run on a fresh --root with --landing-since/--landing-until"
        )

    def table(self, *events: DataFrame, tally: Tally | None = None) -> DataFrame:
        from pyspark.sql import functions as F

        from jobs.flow.fields import field

        pipeline, join = self.pipeline, self.pipeline.join
        left_time, right_time = (_time_column(source) for source in self.sources)

        def side(usable: DataFrame, index: int, leave_out: str | None = None, *extra: Column) -> DataFrame:
            # The event-time column (its field, or for a path one of its own) holds the parsed timestamp.
            source = self.sources[index]
            time_column, computed = _time_column(source), pipeline.computed_for(index)
            kept = [KEPT] if KEPT in usable.columns else []  # `where`: left out after the watermark
            kept += [SOURCE_FILE] if self.transforms(index) else []  # what the transform's records are counted by
            return usable.select(
                *(F.col(EVENT_TIME if c == time_column else c).alias(c) for c in _columns(source, leave_out)),
                *computed.columns,
                *kept,
                *extra,
            )

        left = side(events[0], 0).withWatermark(left_time, spark_duration(pipeline.watermark_s))
        key = field(join.key).alias("_right_key")
        right = side(events[1], 1, self._key_root, key).withWatermark(right_time, spark_duration(join.watermark_s))
        left_events = left
        left, right = prepared(self, left, left_time, tally), kept_only(right, right_time)
        condition = (
            (field(join.key) == F.col("_right_key"))
            & (F.col(right_time) >= F.col(left_time))
            & F.expr(f"`{right_time}` <= `{left_time}` + INTERVAL {join.within_s} SECONDS")
        )
        joined = left.join(right, condition, join.how).drop("_right_key")
        return self.with_partition(joined.select(*self.table_columns(left_events, joined)), left_time)

    def state_rows(self, spark: SparkSession, checkpoint: str) -> int:
        reader = spark.read.format("statestore")  # a join keeps each side's rows apart
        return sum(reader.option("joinSide", side).load(checkpoint).count() for side in ("left", "right"))


def _time_column(source: Source) -> str:
    """The column of a side's event time: its field, or for a path, its column_name."""
    return column_name(source.event_time.column)


def _columns(source: Source, leave_out: str | None = None) -> list[str]:
    """A side's output columns: its fields (but `leave_out`), and its event time's own column for a path."""
    fields = [f for f in source.fields if f != leave_out]
    time_field = source.event_time.column
    return fields if time_field in source.fields else [*fields, column_name(time_field)]
