"""Airflow DAG jobs_backfill: reprocess a closed range of landed data, then publish it (triggered by hand)."""

from jobs import spec
from jobs.orchestration.factory import backfill_dag

# Backfills finalize windows held in state, so only windowed pipelines can be chosen.
dag = backfill_dag(sorted(name for name, declared in spec.load_all().items() if declared.window))
