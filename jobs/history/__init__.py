"""The run history as a table: each pipeline's event log, two Delta tables beside its run
reports, appended by every run and validation under the pipeline's lock.

    rows.py   what a row of `runs` and of `batches` holds (the versioned schema)
    log.py    the writer: append, and keep the tables few files and within retention
    query.py  the logs read without Spark, as DuckDB views (`python -m jobs history`)
    anomalies.py  each metric of a run against its own history, nothing declared
    freshness.py  how old each table's newest rows are, against its `freshness`
"""
