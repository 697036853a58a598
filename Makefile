# The two commands: `make demo` and `make test`. Both set up .venv from the lock first.
VENV := .venv
PY := $(VENV)/bin/python
export SPARK_LOCAL_IP := 127.0.0.1
export PYTHONDONTWRITEBYTECODE :=

.PHONY: help venv assets browser demo report test test-fast lint format lock clean

help:
	@echo "make demo     land sample clickstream events in arrivals and run the pipeline after each"
	@echo "make test     the whole test suite (lint, unit, streaming, crash and CLI tests)"
	@echo "make report   build the data quality report (summary page and Data Docs) and print its path"
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

demo: venv assets
	$(PY) -m jobs.demo $(if $(PIPELINE),--pipeline $(PIPELINE),)

report: venv assets
	$(PY) -m jobs report $(if $(ROOT),--root $(ROOT),)

test: venv lint assets browser
	$(PY) -m pytest

test-fast: venv assets browser
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
	rm -rf data .pytest_cache .ruff_cache test-artifacts .cache
