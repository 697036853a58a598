"""Airflow DAG jobs_rebuild: a pipeline rebuilt under its declaration, then switched; by hand.

Thin on purpose: the factory reads the declarations; no Spark is imported here.
"""

from jobs.orchestration.rebuild_dag import rebuild_dags

globals().update(rebuild_dags())
