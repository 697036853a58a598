"""process: each key's events, with the state Spark keeps for the key, through a declared
processor (jobs/processors/, run with `applyInPandasWithState`); what it emits is appended.

Late rows: a processor with event-time timeouts runs on watermarked events, so an event
at or before the watermark is dropped, whole; without timeouts there is no watermark and
nothing is late.

A processor that raises for one key does not fail the batch (jobs/flow/guard.py): that
key's rows of the batch are quarantined as processor_error with the exception, its state
is left as it was (what the call wrote to it is not applied), and the other keys go on. Its events
reach pandas, whose timestamps end in 2262: an event time pandas cannot hold is
quarantined before (event_time_out_of_range), rather than failing the batch.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from jobs.columns import EVENT_TIME
from jobs.declare import ProcessPipeline
from jobs.flow.guard import WHERE, Guarded
from jobs.flow.patterns.base import Pattern, prepared
from jobs.processors.base import ddl
from jobs.processors.own import state_of
from jobs.units import spark_duration

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from jobs.flow.tally import Tally
# What pandas' datetime64[ns] holds: 1677-09-21T00:12:43.145224192 to 2262-04-11T23:47:16.854775807.
PANDAS_TIMES = ("1677-09-22 00:00:00", "2262-04-11 00:00:00")


class ProcessPattern(Pattern):
    output_follows_input = False  # released by the watermark or timers
    pipeline: ProcessPipeline
    python_workers = True  # the processor runs in pandas (applyInPandasWithState, transformWithStateInPandas)

    @property
    def processor(self):
        return self.pipeline.process.definition

    def output_columns(self) -> list[str]:
        return self.processor.output_columns(self.pipeline.process.settings, self.key_columns)

    @property
    def key_columns(self) -> list[str]:
        return [key.name for key in self.pipeline.keys]

    def keys(self, index: int) -> list[str]:
        return [] if self.transforms(index) else [str(key.path) for key in self.pipeline.keys]

    def describe(self) -> str:
        settings = self.pipeline.process.settings.model_dump(by_alias=True)
        return f"processor {self.processor.name} per {', '.join(map(str, self.pipeline.keys))} {settings}"

    @property
    def stateful_operators(self) -> int:
        return 1

    def contract(self) -> dict[str, Any]:
        # The processor's state layout is fixed; its settings may change.
        contract = {"keys": [str(key) for key in self.pipeline.keys], "processor": self.processor.name}
        if self.processor.own is not None:  # its output is the team's to change: the table's columns
            settings = self.pipeline.process.settings
            contract["processor_output"] = ddl(self.processor.output(settings))
            state = state_of(self.processor.own, settings) or {}  # Spark checks it too, as the query starts
            contract["processor_state"] = {f"{self.processor.name} {name}": kept for name, kept in state.items()}
        return super().contract() | contract

    def outlived(self) -> dict[str, Any]:
        from jobs.declare.code import fingerprint

        own = self.processor.own is not None  # its code changes, and a run resumes across a body's change
        return super().outlived() | ({"processor_source": fingerprint(self.processor.name)} if own else {})

    def held_paths(self) -> list[str]:
        return [str(key) for key in self.pipeline.keys]  # the processor's state is keyed by them

    @property
    def backfill_refusal(self) -> str | None:
        return (
            f"a range leaves {self.processor.name}'s state open (e.g. sessions, statuses), and nothing finalizes it: "
            f"to make its table again from every file, `python -m jobs rebuild {self.pipeline.name}` "
            "(docs/changes.md); for a range on its own, a run on a fresh --root with --landing-since/--landing-until"
        )

    def refusals(self) -> list[tuple[Column, str, Column]]:
        from pyspark.sql import functions as F

        outside = ~F.col(EVENT_TIME).between(*(F.lit(t).cast("timestamp") for t in PANDAS_TIMES))
        detail = F.concat(
            F.lit("event time "),
            F.col(EVENT_TIME).cast("string"),
            F.lit(f" is outside what the processor's pandas holds ({PANDAS_TIMES[0][:10]} to {PANDAS_TIMES[1][:10]})"),
        )
        return [(outside, "event_time_out_of_range", detail)]

    def table(self, *events: DataFrame, tally: Tally | None = None) -> DataFrame:
        from pyspark.sql.streaming.state import GroupStateTimeout

        from jobs.flow.fields import field

        pipeline, processor = self.pipeline, self.processor
        settings = pipeline.process.settings
        where = [c for c in WHERE if c in events[0].columns]
        keys = [field(key.path).alias(key.name) for key in pipeline.keys]
        inputs, timeout = events[0], GroupStateTimeout.NoTimeout
        if processor.event_time_timeout:
            inputs = inputs.withWatermark(EVENT_TIME, spark_duration(pipeline.watermark_s))
            timeout = GroupStateTimeout.EventTimeTimeout
        inputs = prepared(self, inputs, EVENT_TIME, tally)  # what `where` keeps, through the transform
        inputs = inputs.select(*keys, EVENT_TIME, *processor.inputs(settings), *where)
        keys_ddl = ", ".join(f"`{key}` {inputs.schema[key].dataType.simpleString()}" for key in self.key_columns)
        output = f"{keys_ddl}, {ddl(processor.output(settings))}"
        if processor.own is not None:
            return self._own(inputs, tally if len(where) == 3 else None, output)
        function = processor.function(settings, self.key_columns)
        return inputs.groupBy(*self.key_columns).applyInPandasWithState(
            Guarded(function, processor.name, tally) if tally is not None and len(where) == 3 else function,
            output,
            ddl(processor.state),
            "append",
            timeout,
        )

    def _own(self, inputs: DataFrame, tally: Tally | None, output: str) -> DataFrame:
        """A team's own processor, from its declarations folder, on transformWithStateInPandas."""
        from jobs.flow.guard import guarded_processor
        from jobs.flow.transform import by_value, ship_folder
        from jobs.processors.own import TIME_MODES

        processor = self.processor
        ship_folder(inputs.sparkSession)  # its module, to the Python workers
        by_value(processor.own)  # and to the driver's Python that Spark asks for its state's schema
        settings = self.pipeline.process.settings
        emitted = processor.output_columns(settings, self.key_columns)
        stateful = guarded_processor(processor.own, settings, processor.name, inputs.columns, emitted, tally)
        mode = TIME_MODES[processor.own.time_mode]
        return inputs.groupBy(*self.key_columns).transformWithStateInPandas(stateful, output, "Append", mode)

    @property
    def stops_itself(self) -> bool:
        own = self.processor.own
        return own is None or own.time_mode != "processing_time"

    def state_rows(self, spark: SparkSession, checkpoint: str) -> int:
        if self.processor.own is None:
            return super().state_rows(spark, checkpoint)
        # transformWithState keeps each of its state variables apart; its timers are not rows of state.
        (properties,) = spark.read.format("state-metadata").load(checkpoint).select("operatorProperties").first()
        names = [
            v["stateName"] for v in json.loads(properties)["stateVariables"] if v["stateVariableType"] != "TimerState"
        ]
        reader = spark.read.format("statestore")
        return sum(reader.option("stateVarName", name).load(checkpoint).count() for name in names)

    def late_at(self, event_time: Column) -> Column | None:
        return event_time if self.processor.event_time_timeout else None
