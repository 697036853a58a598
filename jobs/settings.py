"""Every environment variable the product reads, in one place (pydantic-settings).

Read afresh on each call of `settings()`: a test, or an Airflow task that sets the S3
credentials for its duration, changes the environment and the next reader sees it.
Secrets (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) are deliberately
absent: they stay in the environment, where the AWS SDKs read them.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated

from platformdirs import user_cache_path
from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JOBS_", extra="ignore", frozen=True)

    # Where things live.
    root: str = "./data"  # base of every location; s3a://bucket/prefix works
    publish_roots: Annotated[list[str], NoDecode] = []  # more places backfills may publish to
    # Fetched jars, Data Docs assets, the JVM class archive, Spark's logs: one per user (not per
    # folder), so that a command finds them wherever it runs (~/.cache/trigger-once-pipelines).
    cache_dir: Path = Field(default_factory=lambda: user_cache_path("trigger-once-pipelines"))
    # Where the locked runtime jars are (jobs/jvm/jars.py); default <cache_dir>/jars.
    jars_dir: Path | None = None
    # Great Expectations keeps its project in a local folder: for a root in a bucket, under this one.
    quality_dir: Path = Path("./data/quality")
    # Other declarations and suites than the ones shipped with the package.
    pipelines_dir: Path | None = None
    expectations_dir: Path | None = None

    # Spark.
    # Local paths on a cluster only when every node mounts them at the same path (jobs/executors.py).
    shared_filesystem: bool = False
    spark_master: str = Field("local[2]", validation_alias=AliasChoices("SPARK_MASTER", "JOBS_SPARK_MASTER"))
    spark_log_level: str = Field("ERROR", validation_alias=AliasChoices("SPARK_LOG_LEVEL", "JOBS_SPARK_LOG_LEVEL"))

    # S3 and s3a (no secrets here).
    aws_region: str = Field("us-east-1", validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION"))
    aws_endpoint_url: str | None = Field(None, validation_alias=AliasChoices("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"))
    # s3a's credentials: the AWS SDK v2's default chain (the environment, then web identity,
    # profiles, container and instance credentials), or the classes named here.
    s3a_credentials_provider: str | None = None
    # Every S3 call is bounded: a stalled endpoint fails the run instead of hanging it, while
    # throttling (503 SlowDown) and server errors (500, 502) are retried with backoff.
    s3_timeout_s: int = 10  # with no byte from S3 for this long, a try of a request has failed
    # Tries of each S3 request, in every client (s3a, boto3, pyarrow); s3a retries throttling more.
    s3_attempts: int = Field(4, validation_alias=AliasChoices("JOBS_S3_ATTEMPTS", "JOBS_S3A_ATTEMPTS"))
    s3_lease_s: float = 120.0

    # A run asked to stop (SIGTERM, Ctrl-C) that has not stopped after this long is ended at
    # once (a stalled call); a second request ends it at once too.
    stop_grace_s: float = 30.0

    # Airflow.
    spark_conn_id: str = "spark_default"
    aws_conn_id: str = "aws_default"
    retry_delay_s: int | None = None  # one retry delay for every pipeline DAG (local testing)
    # Every scheduled pipeline without a `group:` runs in the group DAG of its schedule
    # (jobs_group_hourly for @hourly), not in a DAG of its own.
    group_by_schedule: bool = False

    @field_validator("publish_roots", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("aws_endpoint_url", "retry_delay_s", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("cache_dir", mode="after")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()  # one folder for this process and those it starts

    @property
    def datadocs_assets_dir(self) -> Path:
        return self.cache_dir / "datadocs-assets"


def settings() -> Settings:
    return Settings()


def package_file(name: str) -> Path:
    """A file shipped inside the jobs package (package data), as a path other processes can read."""
    return Path(str(resources.files("jobs") / name))
