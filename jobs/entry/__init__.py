"""Entry points for processes that start the command line without `python -m jobs`.

spark_submit.py  the application spark-submit runs (the Airflow tasks): `python -m jobs ...`
"""
