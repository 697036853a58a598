"""Column names the pipelines add to events, shared by declarations, transforms and processors."""

EVENT_TIME = "event_time"  # the parsed event time every pipeline adds
RESCUED_DATA = "_rescued_data"  # new fields of an inferred-schema source, as a JSON object
