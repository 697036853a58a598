"""events: each usable event as it is (optionally enriched): no state, nothing late.

The columns: the parsed event time, the source's fields (an inferred schema's once
recorded; until then, the fields the declaration names), a dimension's columns, the
computed columns, and `_rescued_data` when the source rescues new fields or values of
another type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.columns import EVENT_TIME, RESCUED_DATA
from jobs.declare import EventsPipeline
from jobs.flow.patterns.base import Pattern, prepared

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from jobs.flow.tally import Tally


class EventsPattern(Pattern):
    pipeline: EventsPipeline
    writes_events = True

    def output_columns(self) -> list[str]:
        source, enrich = self.pipeline.source, self.pipeline.enrich
        fields = list(source.fields) or list(source.required)
        rescued = [RESCUED_DATA] if source.rescues else []
        computed = list(self.pipeline.columns)
        return [EVENT_TIME, *fields, *(enrich.columns if enrich else ()), *computed, *rescued]

    def held_paths(self) -> list[str]:
        # The table holds each field as read, and each computed column.
        return [*self.pipeline.source.fields, *self.pipeline.columns]

    def describe(self) -> str:
        enrich = self.pipeline.enrich
        computed = self.pipeline.columns
        said = "each usable event" + (f", enriched from {enrich.table} on {enrich.key}" if enrich else "")
        return said + (f", with {', '.join(f'{n} = {e}' for n, e in computed.items())}" if computed else "")

    def table(self, *events: DataFrame, tally: Tally | None = None) -> DataFrame:
        kept = prepared(self, events[0], EVENT_TIME, tally)  # no watermark: what `where` keeps, at once
        return self.with_partition(kept.select(*self.table_columns(events[0], kept)), EVENT_TIME)
