"""Airflow DAG jobs_backfill: reprocess a closed range of landed data, then publish it (triggered by hand)."""

from jobs import declare
from jobs.flow.patterns import pattern_of
from jobs.orchestration.factory import backfill_dag

# Only patterns whose last rows a closed range can finalize (windows) can be chosen.
dag = backfill_dag(sorted(name for name, p in declare.load_all().items() if pattern_of(p).backfill_refusal is None))
