#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment from the committed lock, with the
# project itself installed in it (editable: the checkout is what runs).
# Java 17+ is the one prerequisite to run; everything else comes from requirements.txt here, and
# from the jar lock (make jars). Building the JVM part (make jvm) also needs a JDK and Maven,
# which infra/jvm/maven.py checks.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
UV_VERSION=0.13.9
STAMP="$VENV/.synced-lock"

java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
if ! command -v "$java_bin" >/dev/null 2>&1; then
    echo "error: Java 17+ is required (Spark runs on it) and none was found on PATH or in JAVA_HOME." >&2
    echo "       Install one, e.g.: apt-get install openjdk-17-jre-headless" >&2
    exit 1
fi
java_version=$("$java_bin" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)\(\.[0-9]*\)\?.*/\1/p' | head -1)
if [ -z "$java_version" ] || [ "$java_version" -lt 17 ]; then
    echo "error: Java 17+ is required; $java_bin is version ${java_version:-unknown}. Point JAVA_HOME at a newer one." >&2
    exit 1
fi

python_bin=${PYTHON:-python3}
if ! "$python_bin" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "error: Python 3.11+ is required; $python_bin is $("$python_bin" --version 2>&1)." >&2
    exit 1
fi

wanted=$(cat requirements.txt pyproject.toml)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$wanted" ]; then
    exit 0  # up to date with the lock and the project's own declaration
fi

echo "setting up $VENV from requirements.txt (first time: about 2 minutes)..."
[ -x "$VENV/bin/python" ] || "$python_bin" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "uv==$UV_VERSION"
"$VENV/bin/uv" pip sync --quiet --python "$VENV/bin/python" --compile-bytecode requirements.txt
"$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" --no-deps --editable .
rm -rf ./*.egg-info  # setuptools' build leftover in the checkout: the installed metadata is in $VENV
printf '%s' "$wanted" > "$STAMP"
echo "environment ready: $VENV"
