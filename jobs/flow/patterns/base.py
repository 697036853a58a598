"""The Pattern interface: what a pipeline is, and every question that follows from it.

Each pattern module (window, events, process, join) implements it once, so nothing
else asks `if pipeline.window ... elif pipeline.join ...`. The questions without Spark
(output columns, contract, description) import no Spark, so the command line and the
Airflow DAG files can ask them; the ones with Spark import it when asked.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from jobs import schema
from jobs.columns import INTERNAL
from jobs.declare import PipelineBase
from jobs.declare.parts import Source

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from jobs.flow.tally import Tally


def kept_only(events: DataFrame, time_column: str) -> DataFrame:
    """The events the declaration's `where` keeps, taken once the watermark has seen them
    (jobs/flow/expressions.py); patterns import no Spark until asked."""
    from jobs.flow.expressions import kept_only as kept

    return kept(events, time_column)


def prepared(pattern: Pattern, events: DataFrame, time_column: str, tally: Tally | None, index: int = 0) -> DataFrame:
    """Source `index`'s events as the pattern reads them: what `where` keeps, once the
    watermark (on `time_column`) has seen them all, through the declaration's transform
    (jobs/flow/transform.py), each record it gives back counted in `tally`."""
    kept = kept_only(events, time_column)
    if not pattern.transforms(index):
        return kept
    from pyspark.sql import functions as F

    from jobs.flow.transform import transformed

    return transformed(kept, pattern.pipeline.transform, pattern.late_at(F.col(time_column)), tally)


class Pattern(ABC):
    # The counts of a batch only Spark knows (recorded from its progress as it completes):
    # "duplicates_dropped" (deduplication), "late_rows_dropped" (a join's late input rows).
    spark_counts: ClassVar[tuple[str, ...]] = ()
    # Whether its query runs Python in Spark's workers (a processor): the executors of a
    # cluster then need the jobs package, which the application ships (jobs/executors.py).
    # Reading and counting lines is the JVM's (jobs/flow/functions.py), for every pattern.
    python_workers: ClassVar[bool] = False
    # Whether the rows a run writes follow the rows it read (an event in, a row out); not when
    # a watermark or timers release them (windows, sessions, an outer join's unmatched rows),
    # so that a run's output count is judged against its history only then (jobs/history/anomalies.py).
    output_follows_input: ClassVar[bool] = True

    def __init__(self, pipeline: PipelineBase):
        self.pipeline = pipeline

    # What it is.
    @abstractmethod
    def output_columns(self) -> list[str]:
        """The table's columns, in order (a partition column comes after them)."""

    @abstractmethod
    def describe(self) -> str:
        """What it computes, in one line (`python -m jobs list --verbose`)."""

    @property
    def sources(self) -> list[Source]:
        """The streams the query reads, in the order of their checkpoint ids (sources/0, 1)."""
        return self.pipeline.sources

    @property
    def stateful_operators(self) -> int:
        """How many stateful operators the query has (their ids are 0, 1, ...)."""
        return 0

    def contract(self) -> dict[str, Any]:
        """The parts of the declaration a checkpoint cannot outlive a change of.

        Spark keeps state keyed by what the query groups on, with one slot per aggregate,
        and the file sink's log lives with the output: change any of these and the
        checkpoint no longer describes the query. Parts are absent when not declared, so
        checkpoints started before they existed still match.
        """
        pipeline, source = self.pipeline, self.pipeline.source
        contract: dict[str, Any] = {
            "source_format": source.format,
            "event_time_column": source.event_time.column,
            "window_duration_s": None,
            "window_slide_s": None,
            "keys": [],
            "aggregates": [],
            "output_format": pipeline.output.format,
            "partition_by": pipeline.output.partition_by,
            "state_partitions": pipeline.state_partitions,
        }
        if pipeline.enrich:  # the join keeps no state: only the columns it adds are fixed
            contract["enrich_columns"] = list(pipeline.enrich.columns)
        if pipeline.spark_settings.state_store != "hdfs":  # a checkpoint's state is in its store's own format
            contract["state_store"] = pipeline.spark_settings.state_store
        if source.infer_schema:
            # fail and ignore may be switched (e.g. to get past new fields); rescue adds a column.
            contract["infer_schema"] = True
            contract["rescued_data"] = source.rescues
        elif source.rescues:
            contract["rescued_data"] = True
        held = self.held_paths()
        types = {path: schema.spelled(kind) for path in held if (kind := self._kind_at(path)) is not None}
        if types:
            contract["types"] = dict(sorted(types.items()))
        computed = self._held_computed(held)
        if computed:  # a key's or an aggregate's expression: the state holds what it gave
            contract["computed"] = computed
        return contract

    def outlived(self) -> dict[str, Any]:
        """The parts of the declaration Spark resumes a checkpoint across a change of: each
        source's `where` and its computed columns that nothing the state or table holds
        reads (a join's second source's as `join.where`, `join.columns`), and the transform
        with its module's source. A run logs a change
        of them and `plan` shows it: the rows read before keep what they were given."""
        contract, parts = self.contract(), {}
        for index in range(len(self.sources)):
            computed, side = self.pipeline.computed_for(index), "join." if index else ""
            held = contract.get("join_computed" if index else "computed", {})
            unheld = {name: expression for name, expression in computed.columns.items() if name not in held}
            parts |= {f"{side}where": computed.where} if computed.where else {}
            parts |= {f"{side}columns": unheld} if unheld else {}
        if self.pipeline.transform:  # its code too: what it makes, the table's columns say (a run checks them)
            from jobs.declare.code import fingerprint

            parts |= {"transform": self.pipeline.transform, "transform_source": fingerprint(self.pipeline.transform)}
        return parts

    def _held_computed(self, held: list[str]) -> dict[str, str]:
        """The computed columns whose values the state or the table holds (`held` reads them,
        or a column they read does), with their expressions."""
        columns = self.pipeline.columns
        wanted, found = [path.split(".")[0] for path in held], {}
        while wanted:
            name = wanted.pop()
            if name in columns and name not in found:
                found[name] = columns[name]
                wanted += [path.split(".")[0] for path in self.pipeline.column_reads(name)]
        return dict(sorted(found.items()))

    def held_paths(self) -> list[str]:
        """The fields whose values the checkpoint's state or the table holds, so that their
        declared types are part of the contract: Spark's state store refuses a key or a value
        of another type, and a Delta table a column of another type. None here: a pattern
        without state whose table holds no field as it was read."""
        return []

    def _kind_at(self, path: str):
        for source in self.sources:
            kind = source.kind_at(path)
            if kind is not None:
                return kind
        return None

    def suite_values(self) -> dict[str, Any]:
        """What `$name` stands for in the pipeline's expectation suite."""
        return {}

    @property
    def backfill_refusal(self) -> str | None:
        """Why a closed range of this pattern cannot be backfilled; None when it can."""
        return None

    # What it does.
    def refusals(self) -> list[tuple[Column, str, Column]]:
        """(condition, reason, detail): parsed events this pattern cannot take, quarantined
        with the reason before they are counted, rather than failing the batch."""
        return []

    @abstractmethod
    def table(self, *events: DataFrame, tally: Tally | None = None) -> DataFrame:
        """Usable events (one DataFrame per source) -> output rows, batch or streaming alike.
        `tally`: the run's count, for rows the pattern itself quarantines (a processor's error)."""

    # Whether the table holds the events' own columns (events, join): a transform's among them.
    writes_events: ClassVar[bool] = False

    def columns_known(self) -> bool:
        """Whether `output_columns` are all the table's, without Spark: not when a transform
        may add some to a table of events (Spark knows them once it has run it on no rows),
        nor when its fields are a schema not inferred yet (another pipeline's table's, until
        the first run records it)."""
        source = self.pipeline.source
        unknown_fields = source.infer_schema and not source.fields
        return not (self.writes_events and (self.pipeline.transform or unknown_fields))

    def table_columns(self, before: DataFrame, table: DataFrame) -> list[str]:
        """The columns of a table of events (`table`, made of `before`, the events the
        transform was handed): the declared ones (`output_columns`) the transform kept, then
        each it added (none of the product's own); without a transform, the declared ones."""
        if not self.transforms(0):
            return self.output_columns()
        declared = [c for c in self.output_columns() if c in table.columns]
        added = [c for c in table.columns if c not in before.columns and c not in declared]
        return declared + [c for c in added if not c.startswith(INTERNAL)]

    def transforms(self, index: int) -> bool:
        """Whether source `index`'s events go through the declaration's transform (the
        pipeline's own source's: a join's second has none)."""
        return index == 0 and self.pipeline.transform is not None

    def keys(self, index: int) -> list[str]:
        """The paths (or computed columns) of source `index` whose values its state is keyed
        by, read before the pattern: a run's distinct keys are counted over them. None here (a
        pattern keyed by nothing), nor where a transform comes first, which may make them."""
        return []

    # False: Spark runs its query's batches without end, each batch with no new rows too
    # (transformWithState in processing time): the run stops it once one such batch has run.
    stops_itself: ClassVar[bool] = True

    def late_at(self, event_time: Column) -> Column | None:
        """The time at or before which the batch's watermark makes a usable event at
        `event_time` late (what the accounting counts as late); None: it never is, or
        Spark counts it (`spark_counts`)."""
        return None

    def state_rows(self, spark: SparkSession, checkpoint: str) -> int:
        """The rows in state now, read from the checkpoint (when no batch ran to say so)."""
        reader = spark.read.format("statestore")
        return sum(reader.option("operatorId", o).load(checkpoint).count() for o in range(self.stateful_operators))

    def closing_watermark_ms(self, watermark_ms: int) -> int | None:
        """A watermark that passes every output row the state holds after events up to
        `watermark_ms`: the one a backfill's closed range ends with (jobs/backfill/stage.py).
        None: the pattern holds no output back."""
        return None

    def with_partition(self, table: DataFrame, time_column: str) -> DataFrame:
        """Adds the partition column (the UTC date of `time_column`) when the output is partitioned."""
        from pyspark.sql import functions as F

        partition = self.pipeline.output.partition_by
        return table.withColumn(partition, F.to_date(time_column)) if partition else table
