"""Trigger-once Structured Streaming pipelines over landed JSON events.

The packages follow the data:
    declare/         what a pipeline says (the declaration model; no Spark)
    lake/            where things live: layout, filesystem (local, S3), locks, landing
    flow/            landing -> lines -> events -> a pattern -> the table (Spark)
    accounting/      every row of each batch, exactly: Spark's logs, the tally's counts, the ledger
    run/             one run: its steps, its events, its run report
    history/         every run and validation in the pipeline's event log (Delta), asked with SQL
    validate/        Great Expectations on committed output, checks on run reports
    launch/          a run then its validation; several pipelines' runs in one application
    backfill/        reprocess a closed range, then publish it at once
    change/          a changed declaration: what it means against the checkpoint and table
    quality_report/  the data quality report (runs, checks, backfills) and Data Docs
and beside them: processors/ (per-key functions a `process` pipeline names), cli/,
orchestration/ (Airflow), entry/ (what spark-submit starts), pipelines/ (the declarations,
data), request.py (a run request: what every caller asks of a run, its options defined once),
settings.py, units.py, schema.py (field types: objects, arrays, decimals; paths),
columns.py (column names the flow adds), exit_codes.py, session.py, jvm/ (the class
archive and a lean start; the product's jar and the locked jars it adds to Spark),
executors.py (what a cluster's executors need), __main__.py (python -m jobs). The words are the glossary's (docs/glossary.md).
"""
