"""How the product's JVMs start: Spark's classes mapped from an archive, and a lean start
for small increments.

A Spark application loads some 15,000 classes from Spark's jars before it does anything;
on a small machine that is half of a small run. The JDK can map the classes one JVM
loaded from an archive instead (class-data sharing, AppCDS): `python -m jobs jvm-archive`
(run by `make demo`, `make test`, and by a DAG's run task on a worker that lacks it) runs
a small pipeline and its validation in a JVM that dumps what it loaded when it exits, and
every later JVM maps it.

Delta Lake's jars (the jar lock's, once fetched) are on every driver's class path, right
after Spark's (`archived_jars`), Parquet pipelines' too, then the product's jar, and the
warm-up writes a Delta table: a JVM maps an archive only if its class path begins with the one
the archive was made with, each jar of the same size and time, so one archive holds both, and a
Delta run does not load Delta's classes from its jars (the first Delta batch took 1.1 s longer
than a Parquet one).

An archive fits one JDK, one Spark and one set of Spark's, Delta's and the product's jars, where
they lie: its file name carries a fingerprint of them (their paths too: the JVM maps an archive
only from the class path it was made with, so each checkout's environment makes its own), so a
JDK or pyspark upgrade finds no archive of its own and starts as before, with one line that says so. The JVM itself checks the jars again and
falls back to a normal start when they differ.

A run over a small increment (`LEAN_BYTES` of new files at most) also starts with the
quick compiler only (C1) and the serial collector: the optimizing compiler would compile
for longer than the run lasts. A backlog starts with the JVM's defaults.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import time
from functools import cache
from importlib.metadata import version
from pathlib import Path

from jobs.settings import settings

log = logging.getLogger(__name__)

LEAN_BYTES = 16 * 2**20
LEAN_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
QUIET = "-Xlog:cds=off,cds+dynamic=off"  # a JVM that cannot map the archive says nothing: we say it once
_MADE_BY = "python -m jobs jvm-archive"
# Part of every archive's name: 2, as archives made before were cut short (jobs/cli/warm_up.py);
# 3, with Delta's classes.
FORMAT = "3"
# An archive no JVM started from for this long is removed when another is made; a dump a
# killed JVM left (.partial) after an hour.
UNUSED_S = 14 * 86400
PARTIAL_S = 3600
CLASS_PATH = "class path: "  # the warm-up's line that says its JVM's class path


@cache
def java_version_text() -> str:
    """What `java -version` says (JAVA_HOME's java first), or '' without one."""
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else "java"
    # Without the environment's JVM options: they change what -version prints (a lean
    # start says "emulated-client"), not the JDK.
    env = {key: value for key, value in os.environ.items() if key not in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")}
    try:
        found = subprocess.run([java, "-version"], capture_output=True, text=True, check=False, env=env)
    except OSError:
        return ""
    return found.stderr + found.stdout


def _spark_jars() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home(), "jars")


def archived_jars() -> list[str]:
    """The jar lock's Delta jars, when this cache holds them all (none before `python -m
    jobs jars`): every driver's class path has them right after Spark's, whatever its
    pipelines' format (jobs/session.py driver_class_path), so their classes are archived."""
    from jobs.jvm import jars

    return [] if jars.missing("delta") else jars.paths("delta")


@cache
def fingerprint() -> str:
    """The archive's FORMAT, the JDK, the Spark, Spark's jars, the archived jars and the
    product's (paths, sizes, times), in 12 characters."""
    digest = hashlib.sha256(FORMAT.encode() + java_version_text().encode())
    digest.update(version("pyspark").encode())
    digest.update(os.environ.get("SPARK_CONF_DIR", "").encode())  # on the class path before the jars
    from jobs.jvm.jars import product_jar

    product = product_jar()
    # The product's jar too: the archive's class path ends with it (jobs/session.py), and a JVM
    # whose jar differs from the one the archive was made with maps Delta's classes no more.
    for jar in [*sorted(_spark_jars().glob("*.jar")), *map(Path, archived_jars()), *([product] if product else [])]:
        stat = jar.stat()
        # Paths, not names: a JVM maps an archive only from the class path it was made with
        # ("shared class paths mismatch"), and two clones' environments can hold the same jars
        # (hard links of one cache, one time each) in two places.
        digest.update(f"{jar.absolute()}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    return digest.hexdigest()[:12]


def archive_folder() -> Path:
    return (settings().cache_dir / "jvm").resolve()


def archive_path() -> Path:
    return archive_folder() / f"spark-{version('pyspark')}-{fingerprint()}.jsa"


def make_archive(*, force: bool = False) -> Path | None:
    """The archive, made first if this JDK and Spark have none (about 30 s); None if it could
    not be made (the reason is logged)."""
    path = archive_path()
    if path.exists() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    log.info(
        "archiving Spark's and Delta's classes for faster JVM starts (once per JDK, Spark and Delta, about 45 s): %s",
        path,
    )
    partial = path.with_suffix(f".{os.getpid()}.partial")
    env = {**os.environ, "JAVA_TOOL_OPTIONS": f"-XX:ArchiveClassesAtExit={partial} {QUIET}"}
    # The pipes stay open until the JVM has exited, so the dump is complete when this returns.
    made = subprocess.run(
        [sys.executable, "-m", "jobs.cli.warm_up"], env=env, capture_output=True, text=True, timeout=900, check=False
    )
    if made.returncode != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        log.warning("no JVM class archive could be made (exit %s): %s", made.returncode, made.stderr[-500:].strip())
        return None
    if not _maps(partial, made.stdout):
        partial.unlink(missing_ok=True)
        log.warning("no JVM class archive could be made: a JVM does not start from the one dumped (%s)", partial)
        return None
    partial.replace(path)
    _forget_unused(path.parent)
    return path


def _maps(archive: Path, said: str) -> bool:
    """Whether a JVM with the class path the archive was made with maps it (-Xshare:on: or it
    does not start): a dump cut short is never kept."""
    class_path = [line.removeprefix(CLASS_PATH) for line in said.splitlines() if line.startswith(CLASS_PATH)]
    if not class_path:
        return False
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else "java"
    env = {key: value for key, value in os.environ.items() if key not in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")}
    command = [java, f"-XX:SharedArchiveFile={archive}", "-Xshare:on", "-cp", class_path[-1], "-version"]
    return subprocess.run(command, capture_output=True, env=env, check=False).returncode == 0


def _forget_unused(folder: Path) -> None:
    """Archives of other JDKs or Sparks stay while another environment of this cache starts
    from them; those unused for UNUSED_S go, and dumps left unfinished."""
    now = time.time()
    for file in folder.iterdir():
        age = now - file.stat().st_mtime
        if (file.suffix == ".jsa" and age > UNUSED_S) or (file.suffix == ".partial" and age > PARTIAL_S):
            file.unlink(missing_ok=True)


def _used(path: Path) -> None:
    """The archive's time moved to now, at most once a day: what retention goes by."""
    try:
        if time.time() - path.stat().st_mtime > 86400:
            os.utime(path)
    except OSError:  # another user's cache, read-only: it is only retention's clock
        pass


def start_options(new_bytes: int | None = None) -> str:
    """The JVM options of a Spark application about to start: the archive when there is one
    for this JDK and Spark (else one line says it starts without), and the lean start when
    the application reads at most LEAN_BYTES of new files (`new_bytes`; None: unknown)."""
    if "ArchiveClassesAtExit" in os.environ.get("JAVA_TOOL_OPTIONS", ""):
        return ""  # the JVM that makes the archive
    path = archive_path()
    options = [LEAN_OPTIONS] if new_bytes is not None and new_bytes <= LEAN_BYTES else []
    if path.exists():
        _used(path)
        options += [f"-XX:SharedArchiveFile={path}", QUIET]
    else:
        _say_no_archive(path)
    return " ".join(options)


@cache
def _say_no_archive(path: Path) -> None:
    """Once per process: why this JVM starts without the archive, and how to make one."""
    others = sorted(p.name for p in path.parent.glob("*.jsa")) if path.parent.exists() else []
    why = (
        f"the one in {path.parent} ({others[0]}) was made for another JDK, Spark or Delta"
        if others
        else "none was made"
    )
    log.warning("JVM class archive: %s; starting without it (about 4 s slower). Make it: %s", why, _MADE_BY)
