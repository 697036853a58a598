"""Airflow DAGs: one DAG per group of pipelines (`group:` in the declarations, or
JOBS_GROUP_BY_SCHEDULE): jobs_group_<group>, its members in one Spark application.

Thin on purpose: the factory reads the declarations; no Spark is imported here.
"""

from jobs.orchestration.group_dags import group_dags

globals().update(group_dags())
