"""What operators pick and what a shared bucket holds, on a real S3-protocol server (moto on
127.0.0.1): an empty landing is nothing new, a missing bucket a refusal; a location never
holds '..'; a watcher reads its own landing's notifications only, and setting one landing's
notifications up keeps every other rule of the bucket."""

from __future__ import annotations

import json
import logging

import pytest

from infra.s3 import notifications
from jobs import declare
from jobs.backfill import BackfillError, backfill_request
from jobs.lake import s3
from jobs.lake.layout import Locations, StorageError, join, normalize, split_bucket
from jobs.run.runner import RunRefused
from tests.helpers import S3_BUCKET, event, land, run_pipeline


def test_an_s3_landing_with_no_object_is_an_empty_landing(spark, s3_root):
    """Before, the first run of a pipeline in a new bucket was refused ("does not exist")."""
    locations = Locations.resolve("clickstream", root=s3_root)
    report = run_pipeline(spark, declare.load("clickstream"), locations)
    assert (report.status, report.batches, report.input_files) == ("succeeded", 0, 0)
    land(locations.landing, {"first.json": [event("u1", "2023-07-30T10:00:00Z")]})
    assert run_pipeline(spark, declare.load("clickstream"), locations).input_files == 1


def test_a_landing_in_a_missing_bucket_is_refused(spark, s3_endpoint):
    locations = Locations.resolve("clickstream", root="s3a://no-such-bucket-here/root")
    with pytest.raises(RunRefused, match="bucket no-such-bucket-here does not exist"):
        run_pipeline(spark, declare.load("clickstream"), locations)


@pytest.mark.parametrize("location", ["s3a://lake/prod/published/../tables/clicks", "s3a://lake/a//b", "s3://lake/./a"])
def test_a_location_with_dot_dot_or_empty_parts_is_refused(location):
    with pytest.raises(StorageError, match=r"no empty, '\.' or '\.\.' parts"):
        normalize(location)


def test_a_backfill_cannot_publish_into_production_through_dot_dot():
    """Before, s3a://lake/prod/published/../tables/clicks passed the overlap check."""
    with pytest.raises(BackfillError, match=r"'\.\.' parts"):
        backfill_request(
            {
                "pipeline": "clickstream",
                "prefixes": ["dt=2023-07-30"],
                "publish_to": "s3a://lake/prod/published/../tables/clickstream",
            },
            root="s3a://lake/prod",
            allowed_roots=["s3a://lake/prod"],
            backfill_id="bf-1",
            check_landing=False,
        )


def _notification(key: str) -> str:
    record = {"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": S3_BUCKET}, "object": {"key": key}}}
    return json.dumps({"Records": [record]})


def test_a_watcher_takes_its_own_landing_s_notifications_and_leaves_the_others(s3_root, caplog):
    """A queue shared by two landings: before, each watcher deleted the other's messages, and a
    message it could not parse stopped the rest of its batch from being deleted."""
    ours, theirs = (Locations.resolve(name, root=s3_root).landing for name in ("clickstream", "rack_alerts"))
    queue = s3.sqs_client()
    url = queue.create_queue(
        QueueName=f"shared-{split_bucket(s3_root)[1][-40:]}", Attributes={"VisibilityTimeout": "1"}
    )["QueueUrl"]
    for body in ("not json {", _notification(split_bucket(join(theirs, "t.json"))[1])):
        queue.send_message(QueueUrl=url, MessageBody=body)
    queue.send_message(QueueUrl=url, MessageBody=_notification(split_bucket(join(ours, "o.json"))[1]))

    taken: list[str] = []
    with caplog.at_level(logging.WARNING, logger="jobs.lake.s3"):
        for _ in range(3):
            taken += s3.created_objects(url, 1, ours)
    assert taken == [join(ours, "o.json")]
    assert "no bucket notification, dropped" in caplog.text and "not json {" in caplog.text
    # The other landing's message is still there for its own watcher; the unparseable one is gone.
    assert s3.created_objects(url, 2, theirs) == [join(theirs, "t.json")]
    assert queue.receive_message(QueueUrl=url, WaitTimeSeconds=2).get("Messages") is None


def test_setting_up_one_landing_s_notifications_keeps_the_bucket_s_other_rules(s3_root):
    """Before, each set-up replaced the bucket's whole notification configuration."""
    first, second = (Locations.resolve(name, root=s3_root).landing for name in ("clickstream", "rack_alerts"))
    queue_url = notifications.queue(f"both-{split_bucket(s3_root)[1][-40:]}")
    notifications.notify(first, queue_url)
    notifications.notify(second, queue_url)
    notifications.notify(second, queue_url)  # again: still one rule for it

    def prefixes() -> list[str]:
        found = s3.client().get_bucket_notification_configuration(Bucket=S3_BUCKET).get("QueueConfigurations", [])
        return sorted(rule["Filter"]["Key"]["FilterRules"][0]["Value"] for rule in found)

    landed = [split_bucket(landing)[1] + "/" for landing in (first, second)]
    assert [p for p in prefixes() if p in landed] == sorted(landed)
    notifications.stop(first)
    assert landed[0] not in prefixes() and landed[1] in prefixes()
    notifications.stop(second)
