"""S3 and S3-compatible stores (MinIO): the settings, the client and the errors.

Settings come from the variables boto3 and the AWS CLI already read:
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), AWS_REGION,
    AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for MinIO or any S3-compatible endpoint.

Secrets never leave the environment: Spark reads them through the AWS SDK's
environment-variable provider, so they are not in Spark's configuration, logs, run
reports or error messages.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from urllib.parse import urlparse

SCHEMES = ("s3a", "s3")
REPO = Path(__file__).resolve().parent.parent
JAR_CACHE = REPO / ".cache" / "jars"
OFFLINE_JARS = ("hadoop-aws-3.3.1.jar", "aws-java-sdk-bundle-1.11.901.jar")
# Maven coordinates for machines that reach Maven: hadoop-aws must match Spark's Hadoop.
MAVEN_PACKAGES = "org.apache.hadoop:hadoop-aws:{hadoop_version}"


class S3Error(RuntimeError):
    """An S3 location cannot be used; the message says why and never carries a secret."""


def split(uri: str) -> tuple[str, str]:
    """s3a://bucket/a/b -> ("bucket", "a/b")."""
    parsed = urlparse(uri)
    return parsed.netloc, parsed.path.lstrip("/")


def endpoint_url() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def describe_endpoint() -> str:
    return endpoint_url() or f"AWS S3 ({region()})"


@functools.cache
def client():
    """One boto3 client per process, with a few retries and short connect timeouts."""
    import boto3
    from botocore.config import Config

    config = Config(
        region_name=region(),
        retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=5,
        read_timeout=60,
        # MinIO and other S3-compatible servers want path-style addressing.
        s3={"addressing_style": "path" if endpoint_url() else "auto"},
    )
    return boto3.client("s3", endpoint_url=endpoint_url(), config=config)


def explain(error: Exception, uri: str) -> S3Error:
    """A botocore error as one line a user can act on."""
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

    where = f"{uri} ({describe_endpoint()})"
    if isinstance(error, NoCredentialsError):
        return S3Error(f"{where}: no S3 credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    if isinstance(error, EndpointConnectionError):
        return S3Error(f"{where}: cannot reach the S3 endpoint; is the server up (make s3-up for the local one)?")
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        if code in (
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "InvalidToken",
            "ExpiredToken",
            "AccessDenied",
            "403",
        ):
            return S3Error(
                f"{where}: S3 refused the credentials ({code}); check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            )
        if code in ("NoSuchBucket",):
            return S3Error(f"{where}: bucket {split(uri)[0]} does not exist; create it first (make s3-up does locally)")
        return S3Error(f"{where}: S3 error {code or type(error).__name__}")
    return S3Error(f"{where}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")


_UNREACHABLE = ("Unable to execute HTTP request", "Connection refused", "UnknownHostException", "connect timed out")
_REFUSED = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "403 Forbidden", "AccessDenied")


def explain_spark_error(text: str) -> str | None:
    """A short cause for an s3a failure inside Spark, or None if it is not one."""
    if any(marker in text for marker in _UNREACHABLE):
        return f"cannot reach the S3 endpoint {describe_endpoint()}; is the server up?"
    if any(marker in text for marker in _REFUSED):
        return f"S3 ({describe_endpoint()}) refused the credentials; check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    return None


def spark_conf() -> dict[str, str]:
    """Spark settings for s3a://, from the environment; no secret among them."""
    jars = os.environ.get("JOBS_S3A_JARS", "offline")
    conf: dict[str, str] = {}
    if jars == "maven":
        from pyspark import find_spark_home

        clients = sorted(Path(find_spark_home(), "jars").glob("hadoop-client-api-*.jar"))
        version = clients[0].stem.removeprefix("hadoop-client-api-") if clients else "3.4.1"
        conf["spark.jars.packages"] = MAVEN_PACKAGES.format(hadoop_version=version)
        provider = "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"
    elif jars == "offline":
        missing = [name for name in OFFLINE_JARS if not (JAR_CACHE / name).exists()]
        if missing:
            raise S3Error(
                f"s3a:// needs {', '.join(missing)} in {JAR_CACHE}: run `make s3-jars` "
                "(or set JOBS_S3A_JARS=maven where Maven is reachable)"
            )
        conf["spark.jars"] = ",".join(str(JAR_CACHE / name) for name in OFFLINE_JARS)
        provider = "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"
        # hadoop-aws 3.3.1 cannot parse Hadoop 3.5's duration defaults such as "60s".
        conf.update(
            {
                "spark.hadoop.fs.s3a.threads.keepalivetime": "60",
                "spark.hadoop.fs.s3a.connection.establish.timeout": "5000",
                "spark.hadoop.fs.s3a.connection.timeout": "60000",
                "spark.hadoop.fs.s3a.multipart.purge.age": "86400",
            }
        )
    else:
        raise S3Error(f"JOBS_S3A_JARS={jars!r}: use offline (the default) or maven")
    # Instance profiles or assumed roles need another provider (any the jars carry).
    provider = os.environ.get("JOBS_S3A_CREDENTIALS_PROVIDER", provider)
    conf.update(
        {
            "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.aws.credentials.provider": provider,
            "spark.hadoop.fs.s3a.endpoint.region": region(),
            "spark.hadoop.fs.s3a.attempts.maximum": os.environ.get("JOBS_S3A_ATTEMPTS", "3"),
            "spark.hadoop.fs.s3a.retry.limit": os.environ.get("JOBS_S3A_ATTEMPTS", "3"),
        }
    )
    endpoint = endpoint_url()
    if endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(endpoint.startswith("https")).lower()
    return conf
