"""Column names the flow adds to events, shared by parsing, patterns, processors and accounting."""

LINE = "line"  # a landed line, as it was read
SOURCE_FILE = "source_file"  # the landed file it came from
LINE_NUMBER = "line_number"  # its 1-based number among the lines of its part of the file (jobs/accounting/lines.py)
FILE_SIZE = "_file_size"  # the landed file's size in bytes, when it was read
BLOCK_START = "_block_start"  # the byte where the part of the file Spark read it from starts
EVENT_TIME = "event_time"  # the parsed event time every pipeline adds
QUARANTINE_REASON = "quarantine_reason"  # null for a usable record
QUARANTINE_DETAIL = "quarantine_detail"  # what exactly is wrong with it
RESCUED_DATA = "_rescued_data"  # new fields of an inferred-schema source, as a JSON object
BROKEN = "_rules_broken"  # bit i set: a usable record breaks the pipeline's rule i (jobs/flow/rules.py)
# What the decoder hands back beside the fields (jobs/flow/functions.py; tests/reference/decode.py, its reference).
REASON = "_reason"  # why the line cannot be read as declared; null when it can
DETAIL = "_detail"  # ... and what exactly
NEW_FIELDS = "_new_fields"  # keys no declared field names, for new_fields: fail | rescue
RESCUED = "_rescued"  # those keys' values, and values of another type under their paths, as a JSON object
