"""A real Airflow for the tests: its own AIRFLOW_HOME and SQLite metadata DB, the
project's dags folder, and the `airflow` CLI run as a separate process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

AIRFLOW = str(Path(sys.executable).parent / "airflow")


def airflow_env(home: Path, root: str, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "JOBS_ROOT": root,
        "JOBS_RETRY_DELAY_S": "2",
    }
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory) -> Path:
    """A migrated metadata DB (SQLite), shared by the session's Airflow tests."""
    home = tmp_path_factory.mktemp("airflow_home")
    result = subprocess.run(
        [AIRFLOW, "db", "migrate"],
        env=airflow_env(home, str(home / "root")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return home
