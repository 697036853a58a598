"""Airflow DAGs for the declared pipelines, built from the declarations (see dags/).

    factory.py     one DAG per declaration, the backfill DAG, the data quality DAG
    group_dags.py  one DAG per group of pipelines, its members in one Spark application
    reports.py     what a run's tasks publish: its report, its verdict, its table's Asset event
    operators.py   spark-submit of `python -m jobs ...` with the project's environment
    environment.py settings (JOBS_ROOT, connection ids) and the task environment

Everything imported at DAG parse time is light: declarations (YAML) and Airflow itself.
Spark, Great Expectations and boto3 are imported only inside running tasks.
"""
