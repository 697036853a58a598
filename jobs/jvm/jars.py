"""The jars the product adds to Spark, and where they come from.

The runtime jars are the jar lock's (jars.lock.json beside this module), as requirements.txt
is for Python: each jar's Maven coordinates, size and sha256, and what it is for, written by
`make jar-lock` from jvm/pom.xml. `python -m jobs jars` (which make runs) fetches them once,
through Spark's own resolution of Maven coordinates (its Ivy, from Maven Central, its default
repository), into JOBS_JARS_DIR (default <cache>/jars), and checks each against the lock;
from then on nothing is fetched, and a run only compares each jar's size and time with what
was checked. A folder that already holds them (a machine without Maven Central) can be named
as JOBS_JARS_DIR: they are checked the same way.

The product's own jar (jobs-jvm-<version>.jar) is built from jvm/ by Maven (`make jvm`,
which needs a JDK and Maven) and carried by the package (lib/ beside this module).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from jobs.lake.layout import StorageError
from jobs.settings import package_file, settings

log = logging.getLogger(__name__)

LOCK = package_file("jvm/jars.lock.json")
_CHECKED = ".checked.json"  # in the jars folder: file -> the sha256, size and time it was checked at


class JarMismatch(RuntimeError):
    """A jar that is not the one the lock names (another sha256 or size)."""


@dataclass(frozen=True)
class Jar:
    coordinates: str  # group:artifact:version
    file: str  # its name in the jars folder (Maven's: artifact-version.jar)
    size: int
    sha256: str
    used_for: str  # what needs it: "s3a"

    @property
    def ivy_name(self) -> str:
        """The name Spark's resolution gives it (group_artifact-version.jar)."""
        group, artifact, release = self.coordinates.split(":")
        return f"{group}_{artifact}-{release}.jar"


def locked(used_for: str | None = None) -> list[Jar]:
    """The lock's jars (those `used_for` something, or all of them)."""
    entries = json.loads(LOCK.read_text())["jars"]
    return [Jar(**entry) for entry in entries if used_for is None or entry["used_for"] == used_for]


def left_to_spark() -> list[str]:
    """group:artifact of the dependencies Spark's own jars provide (the lock's `left_to_spark`):
    its resolution leaves them out, as Maven did, rather than fetch other versions of them
    (and the AWS SDK bundle hadoop-aws declares, which the lock's SDK modules replace)."""
    return json.loads(LOCK.read_text()).get("left_to_spark", [])


def jars_dir() -> Path:
    return (settings().jars_dir or settings().cache_dir / "jars").resolve()


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _checked_record(folder: Path) -> dict:
    path = folder / _CHECKED
    return json.loads(path.read_text()) if path.exists() else {}


def is_checked(jar: Jar, folder: Path) -> bool:
    """Whether the folder holds the jar the lock names: hashed once, then its size and time
    compared with what was hashed."""
    path = folder / jar.file
    if not path.is_file() or path.stat().st_size != jar.size:
        return False
    stat, seen = path.stat(), _checked_record(folder).get(jar.file)
    if seen == {"sha256": jar.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}:
        return True
    if sha256(path) != jar.sha256:
        return False
    _record_checked(folder, jar, path)
    return True


def _record_checked(folder: Path, jar: Jar, path: Path) -> None:
    record = _checked_record(folder)
    stat = path.stat()
    record[jar.file] = {"sha256": jar.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    (folder / _CHECKED).write_text(json.dumps(record, indent=2, sort_keys=True))


def missing(used_for: str | None = None) -> list[Jar]:
    """The locked jars the jars folder does not hold as the lock names them."""
    folder = jars_dir()
    return [jar for jar in locked(used_for) if not is_checked(jar, folder)]


def paths(used_for: str) -> list[str]:
    """The checked jars `used_for` something, for Spark's `spark.jars`; StorageError naming
    the command that fetches them when one is missing."""
    absent = missing(used_for)
    if absent:
        names = ", ".join(jar.file for jar in absent)
        raise StorageError(
            f"{used_for} needs {names} in {jars_dir()}, as the jar lock names them: run `python -m jobs jars` "
            "(make does), or point JOBS_JARS_DIR at a folder that holds them"
        )
    return [str(jars_dir() / jar.file) for jar in locked(used_for)]


def fetch(jars: list[Jar]) -> None:
    """Fetch `jars` into the jars folder through Spark's own resolution, each checked
    against the lock before it is kept. JarMismatch when one is not the jar the lock names."""
    if not jars:
        return
    folder = jars_dir()
    folder.mkdir(parents=True, exist_ok=True)
    megabytes = sum(jar.size for jar in jars) / 2**20
    log.info("fetching %d jar(s), %.0f MB, through Spark's resolution (once): %s", len(jars), megabytes, _names(jars))
    with tempfile.TemporaryDirectory(prefix="jobs-jars-", dir=folder) as scratch:
        _resolve([jar.coordinates for jar in jars], Path(scratch))
        for jar in jars:
            found = Path(scratch, "jars", jar.ivy_name)
            if not found.is_file():
                raise JarMismatch(f"Spark's resolution of {jar.coordinates} gave no {jar.ivy_name}")
            digest = sha256(found)
            if digest != jar.sha256:
                raise JarMismatch(f"{jar.coordinates}: sha256 {digest}, the lock says {jar.sha256}; not kept")
            found.replace(folder / jar.file)
            _record_checked(folder, jar, folder / jar.file)


def _names(jars: list[Jar]) -> str:
    return ", ".join(jar.coordinates for jar in jars)


def _resolve(coordinates: list[str], ivy: Path) -> None:
    """Spark resolves Maven coordinates before it starts an application (`--packages`):
    into <ivy>/jars, from its default repositories (the local Maven and Ivy caches, then
    Maven Central). The application itself does nothing."""
    from pyspark.find_spark_home import _find_spark_home

    nothing = ivy / "nothing.py"
    nothing.write_text("")
    submit = Path(_find_spark_home(), "bin", "spark-submit")
    command = [str(submit), "--master", "local[1]", "--packages", ",".join(coordinates)]
    command += ["--conf", f"spark.jars.ivy={ivy}", "--conf", f"spark.jars.excludes={','.join(left_to_spark())}"]
    command.append(str(nothing))
    env = {**_environment(), "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=3600)
    if done.returncode != 0:
        said = "\n".join(done.stderr.strip().splitlines()[-12:])
        raise StorageError(f"Spark could not resolve {', '.join(coordinates)} (exit {done.returncode}):\n{said}")


def _environment() -> dict[str, str]:
    """This process's environment without the JVM options tests and archives set."""
    return {key: value for key, value in os.environ.items() if key != "JAVA_TOOL_OPTIONS"}


def product_jar() -> Path | None:
    """The product's own jar: carried by the package, or built in this checkout's jvm/."""
    name = f"jobs-jvm-{version('trigger-once-pipelines')}.jar"
    for candidate in (package_file(f"jvm/lib/{name}"), Path(__file__).resolve().parents[2] / "jvm" / "target" / name):
        if Path(candidate).is_file():
            return Path(candidate)
    return None
