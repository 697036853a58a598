"""Backfills: reprocess a closed range of landed data, then publish the result at once.

    params -> request (request.py: checked before any Spark work)
    -> reprocess the range into the backfill's own work root, with its own checkpoint
    -> stage every row of the range, what state still holds included (stage.py)
    -> validate the staged result -> publish: one pointer write makes it current (versions.py)
                                  or, for a Delta table: replace the range's dates in the
                                  production table in one commit; roll that back (replace.py)

A backfill never touches the production checkpoint: it reads the production landing
location and writes under its work root and the publish location, or (replace.py) the
production table's range, in one commit.
"""

from jobs.backfill.request import BackfillError, BackfillRequest, backfill_id_for, backfill_request, publish_roots
from jobs.backfill.versions import POINTER, PUBLISHED, REPLACED, VERSIONS, current_version, publish

__all__ = [
    "POINTER",
    "PUBLISHED",
    "REPLACED",
    "VERSIONS",
    "BackfillError",
    "BackfillRequest",
    "backfill_id_for",
    "backfill_request",
    "current_version",
    "publish",
    "publish_roots",
]
