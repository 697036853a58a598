"""Backfills: reprocess a closed range of landed data, then publish the result at once.

    params -> request (request.py: checked before any Spark work)
    -> reprocess the range into the backfill's own work root, with its own checkpoint
    -> stage every row of the range, what state still holds included (stage.py)
    -> validate the staged result -> publish: one pointer write makes it current (versions.py)
                                  or, for a Delta table: replace the range's dates in the
                                  production table in one commit; roll that back (replace.py)

options.py: its params, defined once (the command line, the DAG, each step).
readers.py: a reader of another pipeline's table: its range read from that table's rows (or,
            with --with-downstream, from the upstream backfill's staged rows), what it redid.
steps.py: the steps in their one order, run by the command line and the DAG alike.

A backfill never touches the production checkpoint: it reads the production landing
location and writes under its work root and the publish location, or (replace.py) the
production table's range, in one commit.
"""

from importlib import import_module

# Each name from its module when first used (PEP 562): the DAG files import options.py, and
# with it this package, without the filesystem's pyarrow that request.py and versions.py bring.
_FROM = {
    **dict.fromkeys(
        ("BackfillError", "BackfillRequest", "backfill_id_for", "backfill_request", "publish_roots"), "request"
    ),
    **dict.fromkeys(("POINTER", "PUBLISHED", "REPLACED", "VERSIONS", "current_version", "publish"), "versions"),
}


def __getattr__(name: str):
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"jobs.backfill.{_FROM[name]}"), name)


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
