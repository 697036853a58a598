"""The pipeline's lock in a bucket, which has no flock: a lease object (jobs/lake/locks.py)."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from jobs.lake import s3
from jobs.lake.holders import RUN, Holder, Waiting, WriterLock
from jobs.lake.layout import StorageError, join, split_bucket
from jobs.settings import settings


class LeaseLost(RuntimeError):
    """This run can no longer be sure it holds the checkpoint's lease: it must stop writing."""


class S3Lease(WriterLock):
    """The checkpoint lock in a bucket, which has no flock.

    The lock is an object created with a conditional PUT (If-None-Match: *), so only one
    run can create it. The holder rewrites it every `lease_s / 4` seconds. The next run may
    take it over, again with a conditional PUT (If-Match on the copy it read), so two runs
    can never both take it:
    - at once when the holder was a process on this machine that no longer runs;
    - otherwise once the object is older than `lease_s`.

    The fence: a holder that could not renew for `2/3 lease_s` counts the lease as lost
    (`ensure_held` raises LeaseLost) and stops before anyone may take it over; so does one
    whose renewal finds another run's copy.
    """

    def __init__(
        self, ledger: str, pipeline_name: str, doing: str = RUN, wait_s: float = 0.0, lease_s: float | None = None
    ):
        super().__init__(ledger, pipeline_name, doing, wait_s)
        self.uri = join(ledger, "lock")
        self.lease_s = lease_s or settings().s3_lease_s
        self._me = Holder.this_process(doing, token=uuid.uuid4().hex)
        self._etag: str | None = None
        self._renewed_at = 0.0  # time.monotonic() of the last renewal S3 confirmed
        self._last_error = ""
        self._lost = ""
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def describe(self) -> str:
        return f"lease {self.uri}, renewed every {self.lease_s / 4:g} s"

    def record_spark(self, jvm_pid: int) -> None:
        """The JVM that runs this run's query, written at once (or, should the heartbeat
        have renewed meanwhile, with its next renewal)."""
        self._me = self._me.running(jvm_pid)
        with contextlib.suppress(StorageError):
            if not self._put(IfMatch=self._etag):
                self._adopt()

    def _put(self, **condition: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = split_bucket(self.uri)
        body = self._me.text().encode()
        asked_at = time.monotonic()
        try:
            etag = s3.client().put_object(Bucket=bucket, Key=key, Body=body, **condition)["ETag"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in _CONFLICT:
                return False
            raise s3.explain(error, self.uri) from None
        except BotoCoreError as error:
            raise s3.explain(error, self.uri) from None
        self._etag, self._renewed_at = etag, asked_at
        return True

    def _current(self) -> tuple[Holder | None, str, float] | None:
        """The lock object: its holder (None: a record with no pid to check, which expires),
        ETag and age in seconds; None when there is none (its holder let go between our refused
        PUT and this GET)."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = split_bucket(self.uri)
        try:
            current = s3.client().get_object(Bucket=bucket, Key=key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise s3.explain(error, self.uri) from None
        except BotoCoreError as error:
            raise s3.explain(error, self.uri) from None
        holder = Holder.read(current["Body"].read().decode(errors="replace"))
        # Its age by the store's clock (the answer's Date), never this machine's: a clock set
        # ahead here would take a live lease over.
        now = _served_at(current.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date"))
        return holder, current["ETag"], (now - current["LastModified"]).total_seconds()

    def _free(self, holder: Holder | None, age_s: float) -> bool:
        """Whether a lease another took is free to take over: its holder gone (on this machine)
        or its lease expired, and no JVM of it running."""
        if holder is None:
            return age_s > self.lease_s
        return (holder.gone() or age_s > self.lease_s) and not holder.jvm_alive()

    def holder(self) -> Holder | None:
        current = self._current()
        if current is None:
            return None
        holder, _, age_s = current
        return None if self._free(holder, age_s) else (holder or Holder())

    def __enter__(self) -> S3Lease:
        waiting = Waiting(self.doing, self.wait_s, self.pipeline, self.checkpoint)
        while not self._put(IfNoneMatch="*"):
            current = self._current()
            if current is None:
                continue  # let go a moment ago: create it again
            holder, etag, age_s = current
            if self._free(holder, age_s) and self._put(IfMatch=etag):
                break
            waiting.or_refuse(
                holder,
                why=f". The lease of a run that ended without releasing it is free at once on its own machine, "
                f"elsewhere {self.lease_s:.0f}s after its last renewal ({age_s:.0f}s ago)",
            )
        self.waited_s = waiting.seconds()
        self._heartbeat = threading.Thread(target=self._renew, name="s3-lease", daemon=True)
        self._heartbeat.start()
        return self

    def renew(self) -> bool:
        """One renewal (the heartbeat's, every lease_s / 4): False once another run took it over."""
        if self._put(IfMatch=self._etag) or self._adopt():
            return True
        current = self._current()
        holder = (current[0] if current else None) or Holder()
        self._lost = f"another run took the checkpoint's lease over ({holder.describe()})"
        return False

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            try:
                if not self.renew():
                    return
            except StorageError as error:  # S3 unreachable for a moment: the next renewal tries again
                self._last_error = str(error)

    def _adopt(self) -> bool:
        """After a renewal whose answer was lost: whether the object is still this run's."""
        current = self._current()
        if current is None or current[0] is None or current[0].token != self._me.token:
            return False
        self._etag = current[1]
        return True

    def ensure_held(self) -> None:
        """Raise LeaseLost if this run can no longer be sure it holds the lease."""
        silent_s = time.monotonic() - self._renewed_at
        if not self._lost and silent_s > self.lease_s * 2 / 3:
            why = self._last_error or f"the S3 endpoint {s3.describe_endpoint()} stopped answering"
            self._lost = (
                f"{why}: the lease was not renewed for {silent_s:.0f}s, so the run stopped before "
                f"another run may take it over ({self.lease_s:.0f}s)"
            )
        if self._lost:
            raise LeaseLost(self._lost)

    def __exit__(self, *exc_info: object) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        self._stop.set()
        if self._lost:
            return  # not this run's to release
        bucket, key = split_bucket(self.uri)
        with contextlib.suppress(BotoCoreError, ClientError, StorageError):
            # Released only while it is still this run's; if S3 is unreachable, the next
            # run on this machine takes it over at once, elsewhere when it expires.
            current = self._current()
            if current and current[0] and current[0].token == self._me.token:
                s3.client().delete_object(Bucket=bucket, Key=key)


_CONFLICT = ("PreconditionFailed", "412", "ConditionalRequestConflict")


def _served_at(date: str | None) -> datetime:
    """When the store answered, by its clock (an HTTP Date, in UTC); this machine's clock only
    when the answer has no Date it can read."""
    try:
        served = parsedate_to_datetime(date) if date else None
    except (TypeError, ValueError):
        served = None
    if served is None:
        return datetime.now(UTC)
    return served if served.tzinfo else served.replace(tzinfo=UTC)  # '-0000' reads as naive
