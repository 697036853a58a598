"""No Python worker reads a line: a window, events or join pipeline's run (and its
validation) starts none, its lines decoded and counted in the JVM (jobs/flow/functions.py);
a processor's pipeline starts them, for its processor only. Proved from the process tree:
Spark's Python workers are started through the interpreter PYSPARK_PYTHON names, here a
wrapper that leaves a mark before it starts the real one."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from demo import samples
from jobs.lake import fs
from jobs.lake.landing import land_lines
from jobs.lake.layout import Locations, join
from tests.helpers import REPO, python_cmd

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("name", "python_workers"),
    [("clickstream_unique", False), ("clickstream_enriched", False), ("ad_clicks", False), ("rack_alerts", True)],
)
def test_only_a_processor_starts_python_workers(tmp_path, name, python_workers):
    marks = tmp_path / "marks"
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\necho "$$" >> {marks}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    root = str(tmp_path / "root")
    locations = Locations.resolve(name, root=root)
    for file, text in samples.DIMENSIONS.get(name, {}).items():
        fs.write_text(join(locations.dimensions, file), text)
    land_lines(samples.arrivals(name)[0], locations.landing)
    env = {**os.environ, "PYSPARK_PYTHON": str(wrapper)}
    run = subprocess.run(
        python_cmd("run", name, "--root", root), cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode in (0, 4), run.stdout + run.stderr  # validated: passed, warned or failed
    assert "batch 0:" in run.stdout, run.stdout
    assert marks.exists() == python_workers, f"{name}: Python workers started: {marks.exists()}"
