"""A landing's bucket notifying an SQS queue of each object created in it, on the local
S3-protocol server (moto speaks SQS on the same endpoint), for `on_arrival: {queue: ...}`.

    .venv/bin/python -m infra.s3.notifications PIPELINE --root s3a://lake/demo

prints the queue's URL for the pipeline's `on_arrival:` block (see docs/airflow.md,
"Run on arrival"). On AWS, the same is one notification configuration on the bucket (or
an EventBridge rule); MinIO has no SQS target (its watcher lists instead). The tests and the
arrival bench set notifications up here.
"""

from __future__ import annotations

import argparse

from jobs.lake import s3
from jobs.lake.layout import Locations, split_bucket


def queue(name: str) -> str:
    """The URL of the SQS queue of that name (made if missing)."""
    return s3.sqs_client().create_queue(QueueName=name)["QueueUrl"]


def notify(landing: str, queue_url: str) -> None:
    """The landing's bucket sends `s3:ObjectCreated:*` under the landing to the queue: one rule
    of the bucket's notification set-up, named after the landing; the bucket's other rules (other
    landings', anyone's) are kept."""
    bucket, prefix = split_bucket(landing)
    attributes = s3.sqs_client().get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]
    rules = {"FilterRules": [{"Name": "prefix", "Value": prefix.rstrip("/") + "/"}]}
    created = {
        "Id": _rule_id(prefix),
        "QueueArn": attributes["QueueArn"],
        "Events": ["s3:ObjectCreated:*"],
        "Filter": {"Key": rules},
    }
    _set_up(bucket, lambda queues: [*queues, created], drop=_rule_id(prefix))


def stop(landing: str) -> None:
    """The bucket notifies nothing more of this landing (a lost notification, as far as its
    watcher can tell); the bucket's other rules are kept."""
    bucket, prefix = split_bucket(landing)
    _set_up(bucket, lambda queues: queues, drop=_rule_id(prefix))


def _rule_id(prefix: str) -> str:
    return f"jobs-landing:{prefix.rstrip('/')}"


def _set_up(bucket: str, change, drop: str) -> None:
    """The bucket's notification set-up read, this landing's rule (`drop`) taken out, changed, written back."""
    client = s3.client()
    current = client.get_bucket_notification_configuration(Bucket=bucket)
    current.pop("ResponseMetadata", None)
    current["QueueConfigurations"] = change([q for q in current.get("QueueConfigurations", []) if q.get("Id") != drop])
    client.put_bucket_notification_configuration(
        Bucket=bucket, NotificationConfiguration={k: v for k, v in current.items() if v}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipeline")
    parser.add_argument("--root", required=True, help="the pipelines' root in the bucket, s3a://bucket/prefix")
    parser.add_argument("--queue-name", help="default: <pipeline>-landing")
    args = parser.parse_args()
    landing = Locations.resolve(args.pipeline, root=args.root).landing
    url = queue(args.queue_name or f"{args.pipeline}-landing")
    notify(landing, url)
    print(url)


if __name__ == "__main__":
    main()
