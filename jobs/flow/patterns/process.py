"""process: each key's events, with the state Spark keeps for the key, through a declared
processor (jobs/processors/, run with `applyInPandasWithState`); what it emits is appended.

Late rows: a processor with event-time timeouts runs on watermarked events, so an event
at or before the watermark is dropped, whole; without timeouts there is no watermark and
nothing is late.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.columns import EVENT_TIME
from jobs.declare import ProcessPipeline
from jobs.flow.patterns.base import Pattern
from jobs.units import spark_duration

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class ProcessPattern(Pattern):
    pipeline: ProcessPipeline

    @property
    def processor(self):
        return self.pipeline.process.definition

    def output_columns(self) -> list[str]:
        return self.processor.output_columns(self.pipeline.process.settings, list(self.pipeline.keys))

    def describe(self) -> str:
        settings = self.pipeline.process.settings.model_dump(by_alias=True)
        return f"processor {self.processor.name} per {', '.join(self.pipeline.keys)} {settings}"

    @property
    def stateful_operators(self) -> int:
        return 1

    def contract(self) -> dict[str, Any]:
        # The processor's state layout is fixed; its settings may change.
        return super().contract() | {"keys": list(self.pipeline.keys), "processor": self.processor.name}

    @property
    def backfill_refusal(self) -> str | None:
        return (
            f"a range leaves {self.processor.name}'s state open (e.g. sessions, statuses), and nothing finalizes it: "
            "run it on a fresh --root over the landing range instead (--landing-since/--landing-until)"
        )

    def table(self, *events: DataFrame) -> DataFrame:
        from pyspark.sql.streaming.state import GroupStateTimeout

        pipeline, processor = self.pipeline, self.processor
        settings = pipeline.process.settings
        inputs = events[0].select(*pipeline.keys, EVENT_TIME, *processor.inputs(settings))
        timeout = GroupStateTimeout.NoTimeout
        if processor.event_time_timeout:
            inputs = inputs.withWatermark(EVENT_TIME, spark_duration(pipeline.watermark_s))
            timeout = GroupStateTimeout.EventTimeTimeout
        keys_ddl = ", ".join(f"`{key}` {inputs.schema[key].dataType.simpleString()}" for key in pipeline.keys)
        return inputs.groupBy(*pipeline.keys).applyInPandasWithState(
            processor.function(settings, list(pipeline.keys)),
            f"{keys_ddl}, {processor.output(settings)}",
            processor.state,
            "append",
            timeout,
        )

    def late_at(self, event_time: Column) -> Column | None:
        return event_time if self.processor.event_time_timeout else None
