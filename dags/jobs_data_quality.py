"""Airflow DAG jobs_data_quality: validate every table and rebuild Data Docs, on the tables' Assets and daily."""

from jobs import declare
from jobs.orchestration import environment
from jobs.orchestration.factory import data_quality_dag

dag = data_quality_dag(sorted(declare.load_all()), environment.root())
