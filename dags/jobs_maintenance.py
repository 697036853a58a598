"""Airflow DAG jobs_maintenance: compact and vacuum every Delta table, daily.

Thin on purpose: the factory reads the declarations; no Spark is imported here.
"""

from jobs.orchestration.maintenance_dag import maintenance_dags

globals().update(maintenance_dags())
