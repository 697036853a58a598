"""Trigger-once Structured Streaming pipelines over landed JSON events.

The packages follow the data:
    declare/     what a pipeline says (the declaration model; no Spark)
    lake/        where things live: layout, filesystem (local, S3), locks, landing
    flow/        landing -> lines -> events -> a pattern -> the table (Spark)
    run/         one run: checkpoint logs, the ledger, progress, accounting, the run report
    validate/    Great Expectations on committed output, checks on run reports
    backfill/    reprocess a closed range, then publish it at once
    publish/     the data quality report (runs, checks, backfills) and Data Docs
and beside them: processors/ (per-key functions a `process` pipeline names), cli/,
orchestration/ (Airflow), entry/ (what spark-submit starts), pipelines/ (the declarations,
data), settings.py, units.py, schema.py (field types: objects, arrays, decimals; paths), columns.py (column names the flow adds), exit_codes.py,
session.py, jvm.py (the class archive and a lean start), executors.py (what a cluster's
executors need), group.py (several pipelines' runs in one application), __main__.py (python -m jobs).
"""
