"""Backfills: reprocess a closed range of landed data, then publish the result at once.

    params -> plan (plan.py: checked before any Spark work)
    -> reprocess the range into the backfill's own work root, with its own checkpoint
    -> stage every row of the range, what state still holds included (stage.py)
    -> validate the staged result -> publish: one pointer write makes it current (versions.py)

A backfill never touches the production checkpoint or table: it reads the production
landing location and writes only under its work root and the publish location.
"""

from jobs.backfill.plan import BackfillError, BackfillPlan, backfill_id_for, plan_backfill, publish_roots
from jobs.backfill.versions import POINTER, PUBLISHED, VERSIONS, current_version, publish

__all__ = [
    "POINTER",
    "PUBLISHED",
    "VERSIONS",
    "BackfillError",
    "BackfillPlan",
    "backfill_id_for",
    "current_version",
    "plan_backfill",
    "publish",
    "publish_roots",
]
