"""The JVM class archives of the per-user cache: an archive no JVM started from for
UNUSED_S goes when another is made, and so does a dump a killed JVM left unfinished."""

from __future__ import annotations

import os
import time

from jobs.jvm import archive


def test_archives_unused_for_weeks_and_unfinished_dumps_go_when_another_is_made(tmp_path):
    now = time.time()
    ages = {
        "spark-4.2.0-in-use.jsa": 60,
        "spark-4.2.0-another-venv.jsa": archive.UNUSED_S - 3600,  # another environment's, used lately
        "spark-4.2.0-forgotten.jsa": archive.UNUSED_S + 3600,
        "spark-4.2.0-dumping.123.partial": 60,  # another process is making it now
        "spark-4.2.0-killed.456.partial": archive.PARTIAL_S + 60,
    }
    for name, age in ages.items():
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (now - age, now - age))

    archive._forget_unused(tmp_path)

    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "spark-4.2.0-another-venv.jsa",
        "spark-4.2.0-dumping.123.partial",
        "spark-4.2.0-in-use.jsa",
    ]


def test_a_start_from_an_archive_is_what_keeps_it(tmp_path):
    used = tmp_path / "spark-4.2.0-used.jsa"
    used.write_bytes(b"x")
    old = time.time() - archive.UNUSED_S
    os.utime(used, (old, old))
    used.chmod(0o444)  # as the JDK leaves it

    archive._used(used)

    assert time.time() - used.stat().st_mtime < 60


def test_the_archive_s_name_changes_with_the_product_s_jar(tmp_path, monkeypatch):
    """Every driver's class path ends with the product's jar: a JVM whose jar is not the one an
    archive was made with mapped Delta's classes no more (709 of them loaded from jars in CI),
    so another jar finds another archive."""
    from jobs.jvm import jars

    jar = tmp_path / "jobs-jvm-0.2.0.jar"
    jar.write_bytes(b"one")
    monkeypatch.setattr(jars, "product_jar", lambda: jar)
    archive.fingerprint.cache_clear()
    before = archive.fingerprint()
    jar.write_bytes(b"other")
    archive.fingerprint.cache_clear()
    try:
        assert archive.fingerprint() != before
    finally:
        archive.fingerprint.cache_clear()


def test_the_same_jars_in_another_checkout_find_another_archive(tmp_path, monkeypatch):
    """A JVM maps an archive only from the class path it was made with ("shared class paths
    mismatch" otherwise, measured on JDK 17): CI's clone, whose environment held the very jars
    of another clone (hard links of one cache: same names, sizes and times), took that clone's
    archive and mapped none of it (709 Delta classes loaded from jars)."""
    from jobs.jvm import jars

    monkeypatch.setattr(jars, "product_jar", lambda: None)
    monkeypatch.setattr(archive, "archived_jars", lambda: [])
    names = []
    for checkout in ("one", "two"):
        spark_jars = tmp_path / checkout / "jars"
        spark_jars.mkdir(parents=True)
        (spark_jars / "spark-core_2.13-4.2.0.jar").write_bytes(b"the same bytes")
        os.utime(spark_jars / "spark-core_2.13-4.2.0.jar", (1_700_000_000, 1_700_000_000))
        monkeypatch.setattr(archive, "_spark_jars", lambda folder=spark_jars: folder)
        archive.fingerprint.cache_clear()
        names.append(archive.fingerprint())
    archive.fingerprint.cache_clear()
    assert names[0] != names[1]
