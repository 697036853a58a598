"""Airflow DAG jobs_data_quality: validate every table and rebuild Data Docs, on the tables' Assets and daily.

Thin on purpose: the factory reads the declarations; no Spark is imported here.
"""

from jobs.orchestration.quality_dag import data_quality_dags

globals().update(data_quality_dags())
