"""Column names the flow adds to events, shared by parsing, patterns, processors and accounting.

The flow's own columns live in a namespace of their own (INTERNAL, `_jobs_...`), beside the
source's fields, which are named as producers name them: a field called `line` or
`source_file` is the producer's. A source field in that namespace, or named as a column the
output adds (OUTPUT_NAMES), is refused in a declared schema and renamed in an inferred one
(jobs/declare/parts.py)."""

INTERNAL = "_jobs_"

LINE = f"{INTERNAL}line"  # a landed line, as it was read
SOURCE_FILE = f"{INTERNAL}source_file"  # the landed file it came from
LINE_NUMBER = (
    f"{INTERNAL}line_number"  # its 1-based number among the lines of its part of the file (accounting/lines.py)
)
FILE_SIZE = f"{INTERNAL}file_size"  # the landed file's size in bytes, when it was read
BLOCK_START = f"{INTERNAL}block_start"  # the byte where the part of the file Spark read it from starts
QUARANTINE_REASON = f"{INTERNAL}quarantine_reason"  # null for a usable record
QUARANTINE_DETAIL = f"{INTERNAL}quarantine_detail"  # what exactly is wrong with it
KEPT = f"{INTERNAL}kept"  # the declaration's `where` of a usable record (jobs/flow/expressions.py)
BROKEN = f"{INTERNAL}rules_broken"  # bit i set: a usable record breaks the pipeline's rule i (jobs/flow/rules.py)
READ = f"{INTERNAL}read"  # what the decoder hands back, as one struct (jobs/flow/parse.py)
# What the decoder hands back beside the fields (jobs/flow/functions.py; tests/reference/decode.py,
# its reference; io.triggeronce.jobs.sql.Decode names them the same).
REASON = f"{INTERNAL}reason"  # why the line cannot be read as declared; null when it can
DETAIL = f"{INTERNAL}detail"  # ... and what exactly
NEW_FIELDS = f"{INTERNAL}new_fields"  # keys no declared field names, for new_fields: fail | rescue
RESCUED = f"{INTERNAL}rescued"  # those keys' values, and values of another type under their paths, as a JSON object
BLANK = f"{INTERNAL}blank"  # a blank line: no record
FIELD = f"{INTERNAL}field_"  # the declared fields, by their place (FIELD0, FIELD1, ...): named as records name them, one could be one of the above

# Columns the output has whatever the declaration says.
EVENT_TIME = "event_time"  # the parsed event time every pipeline adds
RESCUED_DATA = "_rescued_data"  # new fields of an inferred-schema source, as a JSON object
OUTPUT_NAMES = (EVENT_TIME, "window_start", "window_end", "window_date", "event_date", RESCUED_DATA)


def reserved(name: str) -> str | None:
    """Why a source field may not be named `name` (None: it may)."""
    if name.startswith(INTERNAL):
        return f"names starting with {INTERNAL!r} are the product's own columns"
    if name in OUTPUT_NAMES:
        return f"{name!r} is a column the product adds to the output"
    return None
