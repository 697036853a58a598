"""Airflow DAG jobs_backfill: reprocess a closed range of landed data, then publish it (triggered by hand).

Thin on purpose: the factory reads the declarations; no Spark is imported here.
"""

from jobs.orchestration.factory import backfill_dags

globals().update(backfill_dags())
