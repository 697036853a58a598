"""Airflow import errors for the declarations that do not load, one file of its own.

It builds no DAG: when a declaration does not load (bad YAML, a bad field, a schedule
Airflow refuses), this file fails to import with why, and Airflow shows that as it shows
any import error, while every other DAG is built (the broken pipeline's own DAG fails
with the same error when run). With every declaration loading, it imports cleanly.
"""

from jobs.orchestration.factory import declaration_problems

declaration_problems()
