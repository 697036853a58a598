# The two commands: `make demo` and `make test`. Both set up .venv from the lock first.
VENV := .venv
PY := $(VENV)/bin/python
export SPARK_LOCAL_IP := 127.0.0.1
export PYTHONDONTWRITEBYTECODE :=

.PHONY: help venv assets browser s3-jars s3-up s3-down airflow airflow-stop demo demo-s3 report test test-fast lint format lock clean

help:
	@echo "make demo     land sample events in arrivals and run the pipeline after each (PIPELINE=name, default clickstream)"
	@echo "make test     the whole test suite (lint, unit, streaming, crash and CLI tests)"
	@echo "make demo-s3  the same demo with every location in a bucket on a local S3 server"
	@echo "make s3-up    start the local S3 server (moto, 127.0.0.1:9000); make s3-down stops it"
	@echo "make report   build the data quality report (summary page and Data Docs) and print its path"
	@echo "make airflow  Airflow (standalone) with the project's DAGs on http://127.0.0.1:8080; make airflow-stop stops it"
	@echo "make lint     ruff check and format check"
	@echo "make lock     regenerate requirements.txt from requirements.in"
	@echo "make clean    remove ./data (the demo's root) and caches"

venv:
	@./infra/bootstrap.sh

# Copies of the CDN files Great Expectations' Data Docs link, so the report opens offline.
assets: venv
	@$(PY) infra/datadocs/fetch.py >/dev/null

# Debian's Chromium, for the test that opens the report in a real browser.
browser:
	@./infra/chromium.sh >/dev/null

# hadoop-aws and the AWS SDK bundle for s3a://, from PyPI into .cache/jars (see infra/README.md).
s3-jars: venv
	@$(PY) infra/s3/fetch_jars.py >/dev/null

# The local S3-protocol server (moto) on 127.0.0.1, with the buckets of infra/s3/local.env.
s3-up: venv
	@$(PY) infra/s3/local_server.py start

s3-down: venv
	@$(PY) infra/s3/local_server.py stop

# Airflow standalone on 127.0.0.1 with AIRFLOW_HOME=./airflow_home and the dags/ folder.
airflow: venv assets s3-jars
	@$(PY) infra/airflow/local.py start

airflow-stop: venv
	@$(PY) infra/airflow/local.py stop

demo: venv assets
	$(PY) -m jobs.demo $(if $(PIPELINE),--pipeline $(PIPELINE),)

# The same demo with every location in a bucket on the local S3 server (left running: make s3-down).
demo-s3: venv assets s3-jars s3-up
	set -a && . infra/s3/local.env && set +a && \
	$(PY) -m jobs.demo --root s3a://lake/demo $(if $(PIPELINE),--pipeline $(PIPELINE),)
	@echo "the local S3 server keeps running, with the demo's objects, until: make s3-down"

report: venv assets
	$(PY) -m jobs report $(if $(ROOT),--root $(ROOT),)

test: venv lint assets browser s3-jars
	$(PY) -m pytest

test-fast: venv assets browser s3-jars
	$(PY) -m pytest -m "not slow"

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

lock: venv
	$(VENV)/bin/uv pip compile --python-version 3.11 requirements.in -o requirements.txt

clean:
	rm -rf data .pytest_cache .ruff_cache test-artifacts .cache airflow_home
