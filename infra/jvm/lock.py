"""Write the jar lock (jobs/jvm/jars.lock.json) from jvm/pom.xml: every runtime jar, as
Maven resolves it (runtime scope: Spark's own jars are `provided`), with its size and sha256.

    .venv/bin/python -m infra.jvm.lock      (make jar-lock, after changing the pom)

Like `make lock` for requirements.txt: run it on purpose, review the diff, commit it.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from xml.etree import ElementTree

from infra.jvm.maven import REPO, mvn
from jobs.jvm.jars import sha256

LOCK = REPO / "jobs" / "jvm" / "jars.lock.json"
# What each of the pom's runtime dependencies is for; the jars it brings are for the same.
# The AWS SDK v2 modules s3a uses, in place of the bundle hadoop-aws declares.
SDK_MODULES = ("s3", "s3-transfer-manager", "sts", "apache-client", "netty-nio-client")
USES = {
    "org.apache.hadoop:hadoop-aws": "s3a",
    **{f"software.amazon.awssdk:{module}": "s3a" for module in SDK_MODULES},
    "io.delta:delta-spark_2.13": "delta",
}
_ENTRY = re.compile(r"^(?P<indent>[|+\\ -]*)(?P<group>[\w.-]+):(?P<artifact>[\w.-]+):jar:(?P<version>[\w.-]+):(\w+)")


def resolved(tree: str) -> list[tuple[str, str]]:
    """(coordinates, used for) of each runtime jar in Maven's dependency tree (text)."""
    found, root = [], None
    for line in tree.splitlines()[1:]:  # the first line is the project itself
        entry = _ENTRY.match(line)
        if not entry:
            continue
        coordinates = f"{entry['group']}:{entry['artifact']}:{entry['version']}"
        if len(entry["indent"]) == 3:  # a direct dependency of the pom
            root = f"{entry['group']}:{entry['artifact']}"
            if root not in USES:
                sys.exit(f"error: say what {root} is for in infra/jvm/lock.py USES")
        found.append((coordinates, USES[root]))
    return found


def left_to_spark(pom: Path) -> list[str]:
    """group:artifact of each dependency the pom excludes from a runtime dependency, because
    Spark's own jars hold another version of it (or, the AWS SDK bundle, the pom's SDK modules
    replace it): Spark's resolution is told to leave them out too (`spark.jars.excludes`)."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ElementTree.parse(pom).getroot()
    found = set()
    for dependency in root.iterfind("m:dependencies/m:dependency", ns):
        if dependency.findtext("m:scope", namespaces=ns) != "runtime":
            continue
        for exclusion in dependency.iterfind("m:exclusions/m:exclusion", ns):
            found.add(
                f"{exclusion.findtext('m:groupId', namespaces=ns)}:{exclusion.findtext('m:artifactId', namespaces=ns)}"
            )
    return sorted(found)


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        tree, jars = Path(scratch, "tree.txt"), Path(scratch, "jars")
        mvn("dependency:tree", "-Dscope=runtime", f"-DoutputFile={tree}")
        mvn("dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={jars}")
        entries = []
        for coordinates, used_for in resolved(tree.read_text()):
            _, artifact, version = coordinates.split(":")
            file = jars / f"{artifact}-{version}.jar"
            entries.append(
                {
                    "coordinates": coordinates,
                    "file": file.name,
                    "size": file.stat().st_size,
                    "sha256": sha256(file),
                    "used_for": used_for,
                }
            )
    lock = {
        "about": "The runtime jars the product adds to Spark, as jvm/pom.xml resolves them: "
        "written by `make jar-lock`, fetched and checked by `python -m jobs jars`.",
        "jars": entries,
        "left_to_spark": left_to_spark(REPO / "jvm" / "pom.xml"),
    }
    LOCK.write_text(json.dumps(lock, indent=2) + "\n")
    for entry in entries:
        print(f"{entry['coordinates']:60} {entry['size']:>12,}  {entry['used_for']}")
    print(LOCK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
