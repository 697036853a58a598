"""S3 and S3-compatible stores (MinIO): clients, Spark's s3a settings, and errors in one line.

Settings come from the variables boto3 and the AWS CLI already read (jobs/settings.py):
AWS_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for MinIO or any S3-compatible
endpoint. Credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) never
leave the environment: pyarrow, boto3 and Spark's s3a each read them from there, so they
are not in Spark's configuration, logs, run reports or error messages.

pyarrow.fs does the reading and writing (jobs/lake/fs.py); boto3 only what pyarrow cannot:
the conditional PUTs behind atomic landing and the checkpoint lease, and listings that show
every key as it is (pyarrow drops a key with a '..' segment without a word).
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from jobs.lake.layout import StorageError, StorageUnavailable, is_inside, split_bucket
from jobs.settings import settings

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5
# The AWS SDK v2's own chain: the environment (what the Airflow connection sets too), then
# web identity (EKS, IRSA), profiles, container and instance credentials.
DEFAULT_CREDENTIALS = "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
# s3a's own retries of a throttled call (each of the SDK's tries), backing off from 500 ms.
THROTTLE_RETRIES = 10


def describe_endpoint() -> str:
    return settings().aws_endpoint_url or f"AWS S3 ({settings().aws_region})"


@functools.cache
def _client(endpoint: str | None, region: str):
    import boto3
    from botocore.config import Config

    config = Config(
        region_name=region,
        # Throttling and 5xx retried with exponential backoff, as AWS asks of its clients.
        retries={"max_attempts": settings().s3_attempts, "mode": "standard"},
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=settings().s3_timeout_s,
        # MinIO and other S3-compatible servers want path-style addressing.
        s3={"addressing_style": "path" if endpoint else "auto"},
    )
    return boto3.client("s3", endpoint_url=endpoint, config=config)


def client():
    """The boto3 client for the current settings (one per endpoint and region)."""
    return _client(settings().aws_endpoint_url, settings().aws_region)


def sqs_client():
    """An SQS client; its endpoint AWS_ENDPOINT_URL_SQS, or the S3 endpoint's (one server locally)."""
    import boto3

    endpoint = os.environ.get("AWS_ENDPOINT_URL_SQS") or settings().aws_endpoint_url
    return boto3.client("sqs", endpoint_url=endpoint, region_name=settings().aws_region)


def created_objects(queue_url: str, wait_s: int, under: str) -> list[str]:
    """The objects under `under` that a bucket's notifications say were created (s3a://
    locations), from an SQS queue (`sqs_client`), waiting up to `wait_s` for the first.

    A queue can be shared (one bucket, many landings): a message about other objects only is
    left to its reader (it shows again after the queue's visibility timeout); one about these
    is deleted, and so is one that is not a notification at all, with a warning (read again,
    it would say nothing more)."""
    queue = sqs_client()
    found = queue.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_s)
    created = []
    for message in found.get("Messages", []):
        try:
            named = _created(message["Body"])
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            log.warning(
                "queue %s: a message that is no bucket notification, dropped (%s): %.200r",
                queue_url,
                error,
                message.get("Body"),
            )
            named = None
        if named is not None:
            ours = [uri for uri in named if is_inside(uri, under)]
            if named and not ours:
                continue  # another landing's
            created += ours
        queue.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return created


def _created(body: str) -> list[str]:
    """The objects a notification's body says were created (none for a test event)."""
    from urllib.parse import unquote_plus

    created = []
    for record in json.loads(body).get("Records", []):
        if record.get("eventName", "").startswith("ObjectCreated"):
            bucket, key = record["s3"]["bucket"]["name"], unquote_plus(record["s3"]["object"]["key"])
            created.append(f"s3a://{bucket}/{key}")
    return created


@functools.cache
def _filesystem(endpoint: str | None, region: str):
    from pyarrow import fs

    options = {"region": region, "connect_timeout": CONNECT_TIMEOUT_S, "request_timeout": settings().s3_timeout_s}
    if endpoint:
        parsed = urlparse(endpoint)
        options.update(endpoint_override=parsed.netloc, scheme=parsed.scheme or "https", force_virtual_addressing=False)
    retries = fs.AwsStandardS3RetryStrategy(max_attempts=settings().s3_attempts)
    return fs.S3FileSystem(**options, retry_strategy=retries)


def filesystem():
    """The pyarrow S3 filesystem for the current settings (credentials from the environment)."""
    return _filesystem(settings().aws_endpoint_url, settings().aws_region)


def reset() -> None:
    """Forget the clients: the next ones read the environment again (new credentials, endpoint)."""
    _client.cache_clear()
    _filesystem.cache_clear()


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """These variables in this process's environment (credentials, an endpoint) and clients
    that read them, for the duration; then the environment as it was."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    reset()  # a client made before would keep the old credentials
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        reset()


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
# Of those, what says the endpoint refused the connection itself: decisive, even in a text
# that also holds a 5xx (a request cut off as the server went away, then every retry refused).
_NOT_LISTENING = tuple(marker for marker in _UNREACHABLE if marker != "Unable to execute HTTP request")
_REFUSED = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "403 Forbidden", "AccessDenied", "ACCESS_DENIED", "403")
# ... and when it is throttled (503 SlowDown) or fails inside (500, 502), even after every retry.
_BUSY = (
    "SlowDown",
    "Please reduce your request rate",
    "ServiceUnavailable",
    "SERVICE_UNAVAILABLE",
    "SLOW_DOWN",
    "InternalError",
    "INTERNAL_FAILURE",
    "We encountered an internal error",
    "Bad Gateway",
    "Status Code: 500",
    "Status Code: 502",
    "Status Code: 503",
    "status code: 500",
    "status code: 503",
)


def is_transient(text: str) -> bool:
    """Whether an S3 failure described by `text` passes by itself: throttled, a server
    error, a stall, an endpoint out of reach (a rerun can succeed)."""
    return any(marker in text for marker in (*_BUSY, *_STALLED, *_UNREACHABLE))


def cause(text: str) -> str | None:
    """A short, actionable cause for an S3 failure described by `text`, or None if it is not one."""
    endpoint = describe_endpoint()
    if any(marker in text for marker in _NOT_LISTENING) and not any(marker in text for marker in _STALLED):
        return f"cannot reach the S3 endpoint {endpoint}; is the server up (make s3-up for the local one)?"
    if any(marker in text for marker in _BUSY) and not any(marker in text for marker in _REFUSED):
        tries = f"{settings().s3_attempts} tries with backoff"
        return f"S3 ({endpoint}) was busy or failing inside (throttled, or a 5xx error) through {tries}; run again"
    if any(marker in text for marker in _STALLED):
        limit = f"{settings().s3_timeout_s}s, {settings().s3_attempts} tries"
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
        kind = StorageUnavailable if is_transient(f"{code} {error}") else StorageError
        return kind(f"{uri}: {found}")
    first = str(error).splitlines()[0] if str(error) else ""
    return StorageError(f"{where}: {code or type(error).__name__}: {first}")


def bucket_exists(bucket: str) -> bool:
    from pyarrow import fs

    try:
        return filesystem().get_file_info(bucket).type != fs.FileType.NotFound
    except OSError:
        return True  # cannot tell: say what the original error said


def read_json_if_there(uri: str) -> Any:
    """An object's JSON, or None when there is no such object (one GET)."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, key = split_bucket(uri)
    try:
        return json.loads(client().get_object(Bucket=bucket, Key=key)["Body"].read())
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise explain(error, uri) from None
    except BotoCoreError as error:
        raise explain(error, uri) from None


def objects_under(uri: str, *, top_only: bool = False) -> Iterator[tuple[str, int, int]]:
    """(key below the prefix, size in bytes, modification time in ms) of every object under
    a prefix, as S3 lists them: keys as they are, odd ones included (jobs/lake/fs.py judges);
    `top_only`: those directly under it, and each folder under it as (name + '/', 0, 0)."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, prefix = split_bucket(uri)
    prefix = prefix.rstrip("/") + "/" if prefix.strip("/") else ""
    delimited = {"Delimiter": "/"} if top_only else {}
    pages = client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, **delimited)
    try:
        for page in pages:
            for folder in page.get("CommonPrefixes", ()):
                yield folder["Prefix"][len(prefix) :], 0, 0
            for found in page.get("Contents", ()):
                modified = found["LastModified"]  # to the ms, as s3a and pyarrow read it
                modified_ms = int(modified.timestamp()) * 1000 + modified.microsecond // 1000
                yield found["Key"][len(prefix) :], found["Size"], modified_ms
    except (ClientError, BotoCoreError) as error:
        raise explain(error, uri) from None


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


def s3a_settings() -> dict[str, str]:
    """Spark's settings for s3a:// (hadoop-aws of Spark's own Hadoop, with the AWS SDK v2),
    from the environment; no secret among them. The jars are the jar lock's (jobs/session.py
    s3a_conf adds them).

    Every call is bounded: each try waits at most JOBS_S3_TIMEOUT_S for a byte, and the SDK
    makes JOBS_S3_ATTEMPTS tries; s3a itself tries a failed call once only (its retry.limit),
    but for throttling (503 SlowDown), which its throttle policy retries with exponential
    backoff: a busy prefix is ridden out, a stalled endpoint fails the run in about a minute.
    """
    config = settings()
    timeout = f"{config.s3_timeout_s}s"
    conf = {
        # s3a whose listings never show a key with an empty, '.' or '..' segment (the product's
        # jar), listed folder by folder, where such a key shows for what it is (docs/storage.md).
        "spark.hadoop.fs.s3a.impl": "io.triggeronce.jobs.fs.PlainKeyS3AFileSystem",
        "spark.sql.sources.useListFilesFileSystemList": "",
        "spark.hadoop.fs.s3a.aws.credentials.provider": config.s3a_credentials_provider or DEFAULT_CREDENTIALS,
        "spark.hadoop.fs.s3a.endpoint.region": config.aws_region,
        "spark.hadoop.fs.s3a.connection.establish.timeout": f"{CONNECT_TIMEOUT_S}s",
        "spark.hadoop.fs.s3a.connection.timeout": timeout,
        "spark.hadoop.fs.s3a.connection.acquisition.timeout": timeout,
        "spark.hadoop.fs.s3a.attempts.maximum": str(config.s3_attempts),
        "spark.hadoop.fs.s3a.retry.limit": "0",
        "spark.hadoop.fs.s3a.retry.interval": "500ms",
        "spark.hadoop.fs.s3a.retry.throttle.limit": str(THROTTLE_RETRIES),
        "spark.hadoop.fs.s3a.retry.throttle.interval": "500ms",
        "spark.hadoop.fs.s3a.retry.http.5xx.errors": "true",
    }
    if config.aws_endpoint_url:
        conf["spark.hadoop.fs.s3a.endpoint"] = config.aws_endpoint_url
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(config.aws_endpoint_url.startswith("https")).lower()
    return conf
