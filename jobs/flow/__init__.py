"""The data flow, in order: landing -> lines -> events -> a pattern -> the table (Spark).

source.py    landing -> lines (streaming and batch alike); inferred schemas
parse.py     lines -> typed events, each with the reason it cannot be used (the JVM's decoder
             reads each line strictly: functions.py; its reference, in Python, is the tests'
             tests/reference/; fields.py names a field's column by its path)
functions.py the decoder and the counter of the product's jar, as a session's SQL functions
rules.py     the declared row rules on each parsed record: counted, quarantined, or failing the batch
enrich.py    events + a dimension's columns (a stream-static join)
expressions.py the declared computed columns, and `where` (its filtered rows counted, dropped after the watermark)
transform.py a team's own function (`transform: module:function`) between `where` and the
             pattern: imported from the declarations folder, each row it drops counted as filtered
patterns/    events -> output rows: one module per pattern (window, process, join, events)
sink.py      output rows -> the table (Parquet or Delta), and reading back what it committed
admission.py how much new input a batch takes: a share of the driver's heap, then sized by the state; or as declared (and what each sized batch took)
tally.py     every row counted as the query reads it (in the JVM), for the accounting (jobs/accounting/)
guard.py     a processor's function that cannot fail the batch (its key's rows quarantined)
query.py     the whole flow for one pipeline
conditions.py the error conditions a failed query's JVM gives (a file gone, a record's data)
"""
