"""S3 and S3-compatible stores (MinIO): clients, Spark's s3a settings, and errors in one line.

Settings come from the variables boto3 and the AWS CLI already read (jobs/settings.py):
AWS_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for MinIO or any S3-compatible
endpoint. Credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) never
leave the environment: pyarrow, boto3 and Spark's s3a each read them from there, so they
are not in Spark's configuration, logs, run reports or error messages.

pyarrow.fs does the reading and writing (jobs/lake/fs.py); boto3 only what pyarrow cannot:
the conditional PUTs behind atomic landing and the checkpoint lease.
"""

from __future__ import annotations

import functools
from pathlib import Path
from urllib.parse import urlparse

from jobs.lake.layout import StorageError, split_bucket
from jobs.settings import settings

OFFLINE_JARS = ("hadoop-aws-3.3.1.jar", "aws-java-sdk-bundle-1.11.901.jar")
# Maven coordinates for machines that reach Maven: hadoop-aws must match Spark's Hadoop.
MAVEN_PACKAGES = "org.apache.hadoop:hadoop-aws:{hadoop_version}"
CONNECT_TIMEOUT_S = 5


def describe_endpoint() -> str:
    return settings().aws_endpoint_url or f"AWS S3 ({settings().aws_region})"


@functools.cache
def _client(endpoint: str | None, region: str):
    import boto3
    from botocore.config import Config

    config = Config(
        region_name=region,
        retries={"max_attempts": settings().s3a_attempts, "mode": "standard"},
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=settings().s3_timeout_s,
        # MinIO and other S3-compatible servers want path-style addressing.
        s3={"addressing_style": "path" if endpoint else "auto"},
    )
    return boto3.client("s3", endpoint_url=endpoint, config=config)


def client():
    """The boto3 client for the current settings (one per endpoint and region)."""
    return _client(settings().aws_endpoint_url, settings().aws_region)


@functools.cache
def _filesystem(endpoint: str | None, region: str):
    from pyarrow import fs

    options = {"region": region, "connect_timeout": CONNECT_TIMEOUT_S, "request_timeout": settings().s3_timeout_s}
    if endpoint:
        parsed = urlparse(endpoint)
        options.update(endpoint_override=parsed.netloc, scheme=parsed.scheme or "https", force_virtual_addressing=False)
    retries = fs.AwsStandardS3RetryStrategy(max_attempts=settings().s3a_attempts)
    return fs.S3FileSystem(**options, retry_strategy=retries)


def filesystem():
    """The pyarrow S3 filesystem for the current settings (credentials from the environment)."""
    return _filesystem(settings().aws_endpoint_url, settings().aws_region)


def reset() -> None:
    """Forget the clients: the next ones read the environment again (new credentials, endpoint)."""
    _client.cache_clear()
    _filesystem.cache_clear()


# What the SDKs, Hadoop and pyarrow say when an endpoint accepts a connection but never
# answers (frozen, overloaded), when nothing answers at all, and when it refuses the keys.
_STALLED = ("Read timed out", "Read timeout on endpoint", "SocketTimeoutException", "Timeout was reached")
_UNREACHABLE = (
    "Unable to execute HTTP request",
    "Connection refused",
    "UnknownHostException",
    "connect timed out",
    "Connect timeout on endpoint",
    "NETWORK_CONNECTION",
    "Could not connect",
    "Couldn't connect",
)
_REFUSED = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "403 Forbidden", "AccessDenied", "ACCESS_DENIED", "403")


def cause(text: str) -> str | None:
    """A short, actionable cause for an S3 failure described by `text`, or None if it is not one."""
    endpoint = describe_endpoint()
    if any(marker in text for marker in _STALLED):
        limit = f"{settings().s3_timeout_s}s, {settings().s3a_attempts} tries"
        return f"the S3 endpoint {endpoint} stopped answering (no reply within {limit}); is it frozen or overloaded?"
    if any(marker in text for marker in _UNREACHABLE):
        return f"cannot reach the S3 endpoint {endpoint}; is the server up (make s3-up for the local one)?"
    if any(marker in text for marker in _REFUSED):
        return f"S3 ({endpoint}) refused the credentials; check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    return None


def explain(error: Exception, uri: str) -> StorageError:
    """A boto3 or pyarrow error about `uri` as one line a user can act on."""
    bucket = split_bucket(uri)[0]
    where = f"{uri} ({describe_endpoint()})"
    code = (getattr(error, "response", None) or {}).get("Error", {}).get("Code", "")
    if code == "NoSuchBucket" or (isinstance(error, FileNotFoundError) and not bucket_exists(bucket)):
        return StorageError(f"{where}: bucket {bucket} does not exist; create it first (make s3-up does locally)")
    if type(error).__name__ == "NoCredentialsError":
        return StorageError(f"{where}: no S3 credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    found = cause(f"{code} {error}")
    if found:
        return StorageError(f"{uri}: {found}")
    first = str(error).splitlines()[0] if str(error) else ""
    return StorageError(f"{where}: {code or type(error).__name__}: {first}")


def bucket_exists(bucket: str) -> bool:
    from pyarrow import fs

    try:
        return filesystem().get_file_info(bucket).type != fs.FileType.NotFound
    except OSError:
        return True  # cannot tell: say what the original error said


def put_new_object(source: Path, uri: str) -> bool:
    """Upload a local file as a new object in one conditional PUT; False if the name is taken."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, key = split_bucket(uri)
    try:
        with source.open("rb") as data:
            client().put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        return True
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
            return False
        raise explain(error, uri) from None
    except BotoCoreError as error:
        raise explain(error, uri) from None


def spark_conf() -> dict[str, str]:
    """Spark settings for s3a://, from the environment; no secret among them."""
    config = settings()
    conf: dict[str, str] = {}
    if config.s3a_jars == "maven":
        from pyspark.find_spark_home import _find_spark_home

        clients = sorted(Path(_find_spark_home(), "jars").glob("hadoop-client-api-*.jar"))
        version = clients[0].stem.removeprefix("hadoop-client-api-") if clients else "3.4.1"
        conf["spark.jars.packages"] = MAVEN_PACKAGES.format(hadoop_version=version)
        provider = "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"
    else:
        missing = [name for name in OFFLINE_JARS if not (config.jar_dir / name).exists()]
        if missing:
            raise StorageError(
                f"s3a:// needs {', '.join(missing)} in {config.jar_dir.resolve()}: run `make s3-jars` "
                "(or set JOBS_S3A_JARS=maven where Maven is reachable)"
            )
        conf["spark.jars"] = ",".join(str((config.jar_dir / name).resolve()) for name in OFFLINE_JARS)
        provider = "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"
        # hadoop-aws 3.3.1 cannot parse Hadoop 3.5's duration defaults such as "60s".
        conf.update(
            {
                "spark.hadoop.fs.s3a.threads.keepalivetime": "60",
                "spark.hadoop.fs.s3a.multipart.purge.age": "86400",
            }
        )
    # Bounded calls: s3a's own retries (retry.limit) wrap the SDK's (attempts.maximum),
    # each try waiting at most the socket timeout for a byte: a stalled endpoint fails a
    # run in a few minutes, not the 15 its defaults allow. Plain milliseconds, which both
    # hadoop-aws 3.3 and 3.4 read.
    attempts = str(config.s3a_attempts)
    conf.update(
        {
            "spark.hadoop.fs.s3a.connection.establish.timeout": str(CONNECT_TIMEOUT_S * 1000),
            "spark.hadoop.fs.s3a.connection.timeout": str(config.s3_timeout_s * 1000),
            "spark.hadoop.fs.s3a.retry.interval": "500",
            "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            # Instance profiles or assumed roles need another provider (any the jars carry).
            "spark.hadoop.fs.s3a.aws.credentials.provider": config.s3a_credentials_provider or provider,
            "spark.hadoop.fs.s3a.endpoint.region": config.aws_region,
            "spark.hadoop.fs.s3a.attempts.maximum": attempts,
            "spark.hadoop.fs.s3a.retry.limit": attempts,
        }
    )
    if config.aws_endpoint_url:
        conf["spark.hadoop.fs.s3a.endpoint"] = config.aws_endpoint_url
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(config.aws_endpoint_url.startswith("https")).lower()
    return conf
