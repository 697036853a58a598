"""Airflow DAG jobs_backfill: reprocess a closed range of landed data, then publish it (triggered by hand)."""

from jobs import spec
from jobs.orchestration.factory import backfill_dag

dag = backfill_dag(sorted(spec.load_all()))
