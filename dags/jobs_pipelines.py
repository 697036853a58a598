"""Airflow DAGs: one DAG per declared pipeline (jobs/pipelines/*.yaml): jobs_<pipeline>.

Thin on purpose: the factory reads the declarations; no Spark is imported here.
"""

from jobs.orchestration.factory import pipeline_dags

globals().update(pipeline_dags())
