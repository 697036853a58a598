# The two commands: `make demo` and `make test`. Both set up .venv from the lock first.
VENV := .venv
PY := $(VENV)/bin/python
export SPARK_LOCAL_IP := 127.0.0.1
export PYTHONDONTWRITEBYTECODE :=
# Fetched jars, Data Docs assets and the JVM class archive (make jars, make assets) go to the per-user
# cache (~/.cache/trigger-once-pipelines, or JOBS_CACHE_DIR), where `python -m jobs` finds them from any folder.
# pytest workers: most test time is JVM start-up and waiting, not CPU, so more workers than cores.
TEST_WORKERS ?= 3

.PHONY: help docs venv jvm jars delta-jars jar-lock jvm-archive bench-small assets browser s3-up s3-down cluster cluster-stop airflow airflow-stop demo demo-s3 report test test-fast bench bench-cluster bench-ledger bench-dags lint format lock clean clean-cache

help:
	@echo "make demo     land sample events in arrivals and run the pipeline after each (PIPELINE=name; default clickstream, then rack_temperatures: a Delta table)"
	@echo "make test     the whole test suite (lint, unit, streaming, crash, CLI and Airflow tests)"
	@echo "make demo-s3  the same demo with every location in a bucket on a local S3 server"
	@echo "make s3-up    start the local S3 server (moto, 127.0.0.1:9000); make s3-down stops it"
	@echo "make cluster  a Spark standalone master and two workers on 127.0.0.1 (spark://127.0.0.1:7077); make cluster-stop stops them"
	@echo "make report   build the data quality report (summary page and Data Docs) and print its path"
	@echo "make airflow  Airflow (standalone) with the project's DAGs on http://127.0.0.1:8080; make airflow-stop stops it"
	@echo "make bench    the product against a minimal Spark stream, a Spark batch job and DuckDB (BENCH_ARGS='--events N ...')"
	@echo "make bench-cluster  the same pipeline on local[2] and on the standalone cluster (BENCH_ARGS='--events N ...')"
	@echo "make bench-ledger  how long python -m jobs files takes with 100,000 files taken"
	@echo "make bench-small   small increments against a bare PySpark floor: one file, nothing new, ten pipelines, DAGs, on arrival"
	@echo "make bench-dags    what the pipeline and data quality DAG runs cost (airflow dags test)"
	@echo "make docs     the reference site (docs/, MkDocs) on http://127.0.0.1:8000; make test builds it strictly"
	@echo "make lint     ruff check and format check"
	@echo "make lock     regenerate requirements.txt from pyproject.toml"
	@echo "make jar-lock regenerate the jar lock (jobs/jvm/jars.lock.json) from jvm/pom.xml"
	@echo "make jvm      build the product's jar from jvm/ with Maven (needs a JDK and Maven)"
	@echo "make jars     fetch the jar lock's runtime jars once (s3a, delta), checked by sha256"
	@echo "make clean    remove ./data (the demo's root) and this checkout's caches and builds"
	@echo "make clean-cache  also remove the per-user cache every checkout shares (fetched jars, JVM archives, Spark logs)"

venv:
	@./infra/bootstrap.sh

# Copies of the CDN files Great Expectations' Data Docs link, so the report opens offline.
assets: venv
	@$(PY) -m infra.datadocs.fetch >/dev/null

# Debian's Chromium, for the test that opens the report in a real browser.
browser:
	@./infra/chromium.sh >/dev/null

# The product's jar, built from jvm/ with Maven (a JDK and Maven), its unit tests included.
jvm: venv
	@$(PY) -m infra.jvm.build >/dev/null

# The jar lock's runtime jars (hadoop-aws of Spark's Hadoop and the AWS SDK v2, for s3a://;
# Delta Lake's, for Delta tables), fetched once through Spark's own resolution into
# the cache's jars/ and checked by sha256. delta-jars: Delta's only (13 MB), what the demo needs.
jars: venv
	@$(PY) -m jobs jars >/dev/null

delta-jars: venv
	@$(PY) -m jobs jars --for delta >/dev/null

# The jar lock from jvm/pom.xml (after changing it): review the diff and commit it.
jar-lock: venv
	$(PY) -m infra.jvm.lock

# The local S3-protocol server (moto) on 127.0.0.1, with the buckets of infra/s3/local.env.
s3-up: venv
	@$(PY) -m infra.s3.local_server start

s3-down: venv
	@$(PY) -m infra.s3.local_server stop

# A Spark standalone cluster (master and two workers) from pyspark's Spark, on 127.0.0.1.
cluster: venv jars jvm
	@$(PY) -m infra.spark.cluster start

cluster-stop: venv
	@$(PY) -m infra.spark.cluster stop

# Airflow standalone on 127.0.0.1 with AIRFLOW_HOME=./airflow_home and the dags/ folder.
airflow: venv assets jars jvm jvm-archive
	@$(PY) -m infra.airflow.local start

airflow-stop: venv
	@$(PY) -m infra.airflow.local stop

# The reference site, served from docs/ on this machine only (the strict build is a test).
docs: venv
	$(VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:8000

# The archive of Spark's and Delta's classes every JVM of the product starts from (jobs/jvm/archive.py): once per JDK, Spark and Delta.
jvm-archive: venv delta-jars
	@$(PY) -m jobs jvm-archive

demo: venv assets delta-jars jvm jvm-archive
	$(PY) -m demo $(if $(PIPELINE),--pipeline $(PIPELINE),)

# The same demo with every location in a bucket on the local S3 server (left running: make s3-down).
demo-s3: venv assets jars jvm s3-up
	set -a && . infra/s3/local.env && set +a && \
	$(PY) -m demo --root s3a://lake/demo $(if $(PIPELINE),--pipeline $(PIPELINE),)
	@echo "the local S3 server keeps running, with the demo's objects, until: make s3-down"

report: venv assets
	$(PY) -m jobs report $(if $(ROOT),--root $(ROOT),)

test: venv lint assets browser jars jvm jvm-archive
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope

test-fast: venv assets browser jars jvm jvm-archive
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope -m "not slow"

# Figures, not a test: about 40 minutes on 2 cores at the default 4 M events (benchmarks/scale.py).
bench: venv jars jvm jvm-archive
	$(PY) -m benchmarks.scale $(BENCH_ARGS)

# The same pipeline on local[2] and on the standalone cluster (benchmarks/cluster.py; a few minutes).
bench-cluster: venv jars jvm
	$(PY) -m benchmarks.cluster $(BENCH_ARGS)

# The file ledger (python -m jobs files) with 100,000 files taken: a few seconds per shape.
bench-ledger: venv
	$(PY) -m benchmarks.file_ledger

# Small increments against a bare PySpark floor: one file, nothing new, ten pipelines, DAG runs (~15 minutes).
bench-small: venv assets jvm-archive
	$(PY) -m benchmarks.small $(BENCH_ARGS)
	$(PY) -m benchmarks.arrival $(ARRIVAL_ARGS)

# A small increment, nothing new and the data quality DAG, each timed whole (a few minutes).
bench-dags: venv assets
	$(PY) -m benchmarks.dag_runs $(BENCH_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

lock: venv
	$(VENV)/bin/uv pip compile --python-version 3.11 pyproject.toml --extra airflow --extra dev -o requirements.txt

clean:
	rm -rf data .pytest_cache .ruff_cache airflow_home site jvm/target jobs/jvm/lib

clean-cache: clean
	$(PY) -c "import shutil; from jobs.settings import settings; shutil.rmtree(settings().cache_dir, ignore_errors=True); print('removed', settings().cache_dir)"
