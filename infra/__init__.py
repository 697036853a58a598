"""Set-up and local services for the project: bootstrap, local S3, Airflow, fetched assets (run with python -m infra.<module>)."""
