"""Airflow DAGs for the declared pipelines, built from the declarations (see dags/).

    factory.py     one DAG per declaration, the backfill DAG; a DAG that says why for a
                   declaration that does not load
    quality_dag.py the data quality DAG: validations, the report, every table's freshness
    group_dags.py  one DAG per group of pipelines, its members in one Spark application
    maintenance_dag.py  the daily maintenance of the Delta tables
    rebuild_dag.py the rebuild of a pipeline (or its rollback), by hand
    arrival.py     `schedule: on_arrival`: the landing's Asset and its watcher (DAG processor)
    arrival_watcher.py  the watcher's loop, in the triggerer (what is news: jobs/run/arrivals.py)
    reports.py     what a run's tasks hand on: its report's summary, its verdict, its table's Asset event
    operators.py   spark-submit of `python -m jobs ...` with the project's environment
    run_operators.py  a pipeline's run request (or a group's) through spark-submit, or in the task's process
    retries.py     how Airflow retries a DAG's tasks (exponential backoff, outlasting an S3 lease)
    deadlines.py   a DAG run that overruns: Airflow's DeadlineAlert and its callback
    environment.py settings (JOBS_ROOT, connection ids) and the task environment

Everything imported at DAG parse time is light: declarations (YAML) and Airflow itself.
Spark, Great Expectations and boto3 are imported only inside running tasks.
"""
