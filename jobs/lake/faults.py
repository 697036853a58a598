"""The root cause of a failure in one line: what Java, Hadoop, pyarrow and the AWS SDKs
say deep inside an error (or its stack trace), said so that a user can act on it."""

from __future__ import annotations

import re

from jobs.lake import s3

# (markers, what it means); the first whose marker appears in the error wins.
_LOCAL = (
    (
        ("No space left on device", "Disk quota exceeded", "ENOSPC"),
        "the disk is full{where}: free space there, or put the root (JOBS_ROOT or --root) on a larger disk",
    ),
    (("Read-only file system", "EROFS"), "the file system is read-only{where}"),
    (
        ("Permission denied", "Operation not permitted", "AccessDeniedException", "EACCES", "EPERM"),
        "permission denied{where}: the user running the job must be able to write there",
    ),
)
_PATH = re.compile(r"(?:file:)?(/[^\s'\"():,\[\]]+)")


def _where(text: str, markers: tuple[str, ...]) -> str:
    """ " on /the/path" named on the first line that carries one of `markers`, if any."""
    for line in text.splitlines():
        if any(marker in line for marker in markers):
            found = _PATH.search(line)
            return f" on {found.group(1)}" if found else ""
    return ""


def root_cause(text: str, uses_s3: bool) -> str | None:
    """The cause of the failure described by `text` (an error and its causes, stack traces
    included), or None if it is none of the common faults."""
    if uses_s3:
        found = s3.cause(text)
        if found:
            return found
    for markers, meaning in _LOCAL:
        if any(marker in text for marker in markers):
            return meaning.format(where=_where(text, markers))
    return None
