"""How a pipeline runs, beside what it computes: Spark's sizes and state store (`spark:`),
Airflow's retries and timeout (`airflow:`), and how long landed and output files are kept
(`retention:`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from jobs.declare.parts import Part
from jobs.declare.problems import refuse
from jobs.units import Duration, Size


class Quality(Part):
    """How a run's metrics are held against its own history (the declaration's optional
    `quality:` block; jobs/history/anomalies.py; docs/history.md)."""

    # warn: anomalies are named in the run's summary, report and history, and the run succeeds;
    # fail: the run (committed and accounted) ends with exit 8; off: not judged.
    anomalies: Literal["warn", "fail", "off"] = "warn"
    # Judging starts once the pipeline has this many comparable runs (succeeded, with input).
    min_runs: int = Field(8, ge=3)

    @field_validator("anomalies", mode="before")
    @classmethod
    def _off_unquoted(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML reads an unquoted `off` as false


class Retention(Part):
    """How long what a run keeps is kept (the declaration's optional `retention:` block;
    jobs/run/retention.py; docs/storage.md). By default landed and output files are kept;
    quarantined records and run reports, which hold what producers sent, are not kept forever."""

    # keep; delete, or archive (moved to <root>/archive/<pipeline>/, same relative path), the
    # landed files of batches accounted `landed_after` ago (0: as soon as accounted).
    landed: Literal["keep", "delete", "archive"] = "keep"
    landed_after_s: Literal[0] | Duration = Field(30 * 24 * 3600, alias="landed_after")
    # Output files written this long ago leave the table: Spark's sink log drops them when it
    # next compacts (the file sink's `retention`), and the run after removes them from the folder.
    output_after_s: Duration | None = Field(None, alias="output_after")
    # A Delta table only: how far back it can still be read as it was (time travel, RESTORE).
    # `python -m jobs maintain` (VACUUM) removes the files no version that recent needs.
    time_travel_s: Literal[0] | Duration = Field(7 * 24 * 3600, alias="time_travel")
    # How long a build a rebuild switched away from is kept for `rebuild --rollback`: then
    # its checkpoint, quarantine and (Parquet) table are removed (jobs/run/retention.py).
    previous_build_s: Literal[0] | Duration = Field(7 * 24 * 3600, alias="previous_build")
    # Quarantined records (whole raw lines) of batches accounted this long ago are removed
    # (<root>/quarantine/<pipeline>/batch_id=N/); the run reports keep their counts by reason.
    quarantine_after_s: Literal[0] | Duration = Field(30 * 24 * 3600, alias="quarantine")
    # Run reports and their validation results (with Great Expectations' results and Data Docs
    # pages of those runs, which hold sample values) older than this are removed; the newest
    # run's report always stays.
    runs_after_s: Duration = Field(90 * 24 * 3600, alias="runs")


STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


class Arrival(Part):
    """How a pipeline declared `schedule: on_arrival` runs (its optional `on_arrival:` block;
    jobs/orchestration/arrival.py): when files have landed and nothing more for
    `quiet_period` (a producer's burst is one run), and at least every `at_least_every`
    whatever was heard (a landing the watcher missed costs latency, never data)."""

    quiet_period_s: Duration = Field(30, alias="quiet_period")
    at_least_every_s: Duration = Field(3600, alias="at_least_every")
    listing_every_s: Duration = Field(10, alias="listing_every")  # how often the watcher lists the landing
    # An SQS queue the landing's bucket notifies of the objects created in it (its URL): the
    # watcher looks when told, and lists every `listing_every` only to catch a lost notification.
    queue: str | None = None


class SparkSettings(Part):
    """Sizes for big backlogs (the declaration's optional `spark:` block). They reach both
    `python -m jobs run` and the spark-submit of the pipeline's Airflow DAG."""

    driver_memory: Size | None = None  # Spark's default: 1g. In local mode the executors are the driver.
    executor_memory: Size | None = None  # on a cluster
    # Where state lives: "hdfs" (Spark's default: the JVM heap, snapshotted to the
    # checkpoint) or "rocksdb" (off the heap, with changelog checkpointing) for many keys.
    state_store: Literal["hdfs", "rocksdb"] = "hdfs"
    # Admission control, one or the other (jobs/flow/admission.py); by default derived from the driver's memory.
    max_files_per_trigger: PositiveInt | None = None
    max_bytes_per_trigger: Size | None = None
    conf: dict[str, str] = Field(
        default_factory=dict
    )  # any other Spark setting, e.g. spark.sql.files.maxPartitionBytes

    @model_validator(mode="after")
    def _one_limit(self) -> SparkSettings:
        if self.max_files_per_trigger and self.max_bytes_per_trigger:
            raise ValueError("set max_files_per_trigger or max_bytes_per_trigger, not both (Spark takes one)")
        return self

    @field_validator("conf")
    @classmethod
    def _spark_settings_only(cls, conf: dict[str, str]) -> dict[str, str]:
        named = {"spark.driver.memory": "driver_memory", "spark.executor.memory": "executor_memory"}
        problems = []
        for key in conf:
            if not key.startswith("spark."):
                problems.append(f"{key!r} is not a Spark setting (they start with 'spark.')")
            elif key in named:
                problems.append(f"set {key} as {named[key]}, not in conf")
            elif key in ("spark.sql.shuffle.partitions", "spark.sql.streaming.stateStore.providerClass"):
                problems.append(f"{key} is set by the declaration's state_partitions and state_store")
        refuse(problems)
        return conf

    def session_conf(self) -> dict[str, str]:
        """Settings of the JVM's start (a new session, or spark-submit's --conf)."""
        memory = {"spark.driver.memory": self.driver_memory, "spark.executor.memory": self.executor_memory}
        return {key: f"{size // 2**20}m" for key, size in memory.items() if size} | self.sql_conf()

    def sql_conf(self) -> dict[str, str]:
        """Settings a running session takes before the query starts."""
        conf = {"spark.sql.streaming.stateStore.providerClass": STATE_STORES[self.state_store], **self.conf}
        if self.state_store == "rocksdb":
            conf["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] = "true"
        return conf


class Orchestration(Part):
    """How Airflow runs the pipeline's DAG (the declaration's optional `airflow:` block)."""

    retries: int = 2
    retry_delay_s: Duration = Field(60, alias="retry_delay")  # doubled on each retry, up to max_retry_delay_s
    max_retry_delay_s: Duration = Field(1800, alias="max_retry_delay")
    timeout_s: Duration = Field(3600, alias="timeout")  # a longer run is stopped, and retried from its checkpoint
    # A DAG run still going this long after it was queued is recorded and alerted as overrunning
    # (an Airflow DeadlineAlert: jobs/orchestration/deadlines.py); None: no deadline.
    deadline_s: Duration | None = Field(None, alias="deadline")

    @model_validator(mode="before")
    @classmethod
    def _whole_retries(cls, raw: Any) -> Any:
        retries = raw.get("retries", 0) if isinstance(raw, dict) else 0
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError("retries must be a whole number, 0 or more")
        return raw
