"""Admission control: how much of a backlog one batch takes, and who decided."""

from __future__ import annotations

import pytest

from jobs.flow.admission import batch_limits, default_limits
from jobs.units import UsageError

MiB, GiB = 2**20, 2**30


def test_the_default_follows_the_driver_heap():
    assert (default_limits(1 * GiB).max_bytes, default_limits(1 * GiB).max_files) == (64 * MiB, None)
    assert default_limits(4 * GiB).max_bytes == 256 * MiB
    assert default_limits(64 * MiB).max_bytes == 8 * MiB  # never below 8 MiB
    assert default_limits(1 * GiB).describe() == "about 64 MiB per batch (default)"


def test_a_declaration_overrides_the_default_and_a_run_overrides_both():
    declared = batch_limits(GiB, declared_files=50)
    assert (declared.max_files, declared.max_bytes, declared.chosen_by) == (50, None, "declaration")
    run = batch_limits(GiB, declared_files=50, run_bytes=16 * MiB)
    assert (run.max_files, run.max_bytes, run.chosen_by) == (None, 16 * MiB, "run")
    assert run.describe() == "about 16 MiB per batch (run)"
    assert batch_limits(GiB, run_files=3).describe() == "at most 3 new files per batch (run)"


def test_spark_takes_one_limit_not_both():
    with pytest.raises(UsageError, match="not both"):
        batch_limits(GiB, run_files=2, run_bytes=MiB)
