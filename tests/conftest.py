"""Shared fixtures: one SparkSession for the whole test session, and data helpers."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs import spec as specs
from jobs.landing import land_files
from jobs.storage import Locations

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# The driver JVM starts faster without the optimizing compiler; tests run small data.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


@pytest.fixture(scope="session")
def spark():
    from jobs.session import get_spark

    session = get_spark("jobs-tests", {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    yield session
    session.stop()


@pytest.fixture
def clickstream() -> specs.PipelineSpec:
    return specs.load("clickstream")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def locations(root: Path, clickstream: specs.PipelineSpec) -> Locations:
    return Locations.resolve(clickstream.name, root=str(root))


def event(user: str | None, timestamp: str | None, event_id: str = "e", **extra: object) -> str:
    record = {"event_id": event_id, "event": "click", **extra}
    if user is not None:
        record["user_id"] = user
    if timestamp is not None:
        record["eventtimestamp"] = timestamp
    return json.dumps(record)


def land(landing: str, files: dict[str, list[str]]) -> list[str]:
    """Write files to a scratch folder and land them atomically, like a producer would."""
    with tempfile.TemporaryDirectory() as scratch:
        paths = []
        for name, lines in files.items():
            path = Path(scratch) / name
            path.write_text("".join(f"{line}\n" for line in lines))
            paths.append(str(path))
        return land_files(paths, landing)


def python_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "jobs", *args]


@pytest.fixture
def quiet() -> Iterator[list[str]]:
    """An echo that collects the runner's lines instead of printing them."""
    lines: list[str] = []
    yield lines
