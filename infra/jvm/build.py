"""Build the product's jar from jvm/ with Maven, with its unit tests, when its sources changed.

    .venv/bin/python -m infra.jvm.build      (make jvm; make test and make demo run it)

The jar is jvm/target/jobs-jvm-<version>.jar (reproducible: the same sources build the same
bytes); it is copied into the package (jobs/jvm/lib/) so that a wheel carries it, dated the
build's outputTimestamp: every driver's class path ends with it, and a JVM maps the class
archive only if the jar's size and time are those it was made with (jobs/jvm/archive.py), so
a clone of the same sources starts from the same archive.
"""

from __future__ import annotations

import os
import shutil
import sys
import xml.etree.ElementTree as ET
from datetime import datetime

from infra.jvm.maven import POM, REPO, mvn

PACKAGED = REPO / "jobs" / "jvm" / "lib"
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def built_jar() -> tuple[str, object]:
    version = ET.parse(POM).getroot().find("m:version", _NS).text
    name = f"jobs-jvm-{version}.jar"
    return name, REPO / "jvm" / "target" / name


def _output_timestamp() -> float:
    """The build's project.build.outputTimestamp (what its entries are dated), in seconds."""
    stamp = ET.parse(POM).getroot().find("m:properties/m:project.build.outputTimestamp", _NS).text
    return datetime.fromisoformat(stamp).timestamp()


def _newest_source_ns() -> int:
    sources = [POM, *(p for p in (REPO / "jvm" / "src").rglob("*") if p.is_file())]
    return max(p.stat().st_mtime_ns for p in sources)


def main() -> int:
    name, jar = built_jar()
    if not (jar.exists() and jar.stat().st_mtime_ns >= _newest_source_ns()):
        print(f"building {name} with Maven (jvm/pom.xml, its unit tests included)...", file=sys.stderr)
        mvn("package")
    PACKAGED.mkdir(parents=True, exist_ok=True)
    for old in PACKAGED.glob("jobs-jvm-*.jar"):
        if old.name != name:
            old.unlink()
    if not (PACKAGED / name).exists() or (PACKAGED / name).read_bytes() != jar.read_bytes():
        shutil.copyfile(jar, PACKAGED / name)
    stamp = _output_timestamp()
    if (PACKAGED / name).stat().st_mtime != stamp:
        os.utime(PACKAGED / name, (stamp, stamp))
    print(PACKAGED / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
