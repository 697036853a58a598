"""Entry points: the processes Spark starts, besides `python -m jobs` itself.

spark_submit.py  the application spark-submit runs (the Airflow tasks): `python -m jobs ...`
python_daemon.py the Python workers' daemon Spark starts on a local master
"""
