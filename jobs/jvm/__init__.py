"""The JVM side of the product: how its JVMs start, and the jars they run with.

archive.py   Spark's classes mapped from an archive (class-data sharing), and a lean start
             for small increments
jars.py      the jars the product adds to Spark: its own (built from jvm/ by Maven), and the
             runtime jars of the jar lock (jars.lock.json: s3a, Delta), fetched once through Spark's
             own resolution and checked against their sha256
"""

from jobs.jvm.archive import (
    LEAN_BYTES,
    LEAN_OPTIONS,
    QUIET,
    archive_path,
    archived_jars,
    fingerprint,
    java_version_text,
    make_archive,
    start_options,
)

__all__ = [
    "LEAN_BYTES",
    "LEAN_OPTIONS",
    "QUIET",
    "archive_path",
    "archived_jars",
    "fingerprint",
    "java_version_text",
    "make_archive",
    "start_options",
]
