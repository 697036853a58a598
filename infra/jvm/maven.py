"""Maven, as the project uses it: the mvn on PATH with its default repository, on jvm/pom.xml.

Building the JVM part needs a JDK (javac) and Maven; running needs only a JRE. Each is
checked first, with what to install when it is missing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
POM = REPO / "jvm" / "pom.xml"


def require_build_tools() -> str:
    """The mvn to run; exits with what to install when javac or mvn is missing."""
    missing = [tool for tool in ("javac", "mvn") if shutil.which(tool) is None]
    if missing:
        sys.exit(
            f"error: building the JVM part (jvm/) needs a JDK 17+ and Maven; not found on PATH: {', '.join(missing)}. "
            "Install them, e.g. `apt-get install openjdk-17-jdk-headless maven` (running needs only a JRE)."
        )
    return shutil.which("mvn")


def mvn(*goals: str, quiet: bool = True) -> subprocess.CompletedProcess:
    """Run Maven on jvm/pom.xml in batch mode; exits with Maven's last lines when it fails."""
    command = [require_build_tools(), "-B", *(["-q"] if quiet else []), "-f", str(POM), *goals]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        said = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        sys.exit(f"error: {' '.join(command[1:])} failed (exit {done.returncode}):\n{said}")
    return done
