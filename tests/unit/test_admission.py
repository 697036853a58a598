"""Admission control: how much of a backlog one batch takes, and who decided."""

from __future__ import annotations

import pytest

from jobs.flow.admission import BatchSize, batch_limits, default_limits, describe_sizes, inflated
from jobs.units import UsageError

MiB, GiB = 2**20, 2**30


def test_the_default_follows_the_driver_heap():
    assert (default_limits(1 * GiB).max_bytes, default_limits(1 * GiB).max_files) == (64 * MiB, None)
    assert default_limits(4 * GiB).max_bytes == 256 * MiB
    assert default_limits(64 * MiB).max_bytes == 8 * MiB  # never below 8 MiB
    assert default_limits(1 * GiB).describe() == (
        "about 64 MiB, at most 32,768 files per batch (default), then sized by the state it keeps, up to 128 MiB"
    )
    assert (default_limits(1 * GiB).most_files, default_limits(16 * MiB).most_files) == (32_768, 1_000)
    assert (default_limits(1 * GiB).sized_cap, default_limits(1 * GiB).state_budget) == (128 * MiB, 256 * MiB)


def test_a_declaration_overrides_the_default_and_a_run_overrides_both():
    declared = batch_limits(GiB, declared_files=50)
    assert (declared.max_files, declared.max_bytes, declared.chosen_by) == (50, None, "declaration")
    run = batch_limits(GiB, declared_files=50, run_bytes=16 * MiB)
    assert (run.max_files, run.max_bytes, run.chosen_by) == (None, 16 * MiB, "run")
    assert run.describe() == "about 16 MiB, at most 32,768 files per batch (run)"
    assert batch_limits(GiB, run_files=3).describe() == "at most 3 new files per batch (run)"
    assert run.sized_cap is None and declared.sized_cap is None  # only the default is sized
    assert declared.most_files is None  # a limit in files is the only one


def test_what_passes_one_batch_is_said_in_files_or_bytes():
    """What a `once` run takes in its one batch beyond what a batch is capped at."""
    default = default_limits(GiB)
    assert default.passed_by(32_768, 64 * MiB) is None
    assert default.passed_by(1_000_000, 15 * MiB) == "1,000,000 new files, more than the 32,768 a batch takes"
    assert default.passed_by(400, 589 * MiB) == "589 MiB of new files, more than the 64 MiB a batch takes"
    assert batch_limits(GiB, run_files=3).passed_by(4, 1) == "4 new files, more than the 3 a batch takes"


def test_gzip_divides_the_sized_cap_as_it_divides_the_default():
    gzip = inflated(default_limits(GiB), 8.0)
    assert (gzip.max_bytes, gzip.sized_cap, gzip.state_budget) == (8 * MiB, 16 * MiB, 256 * MiB)
    assert gzip.describe().endswith("then sized by the state it keeps, up to 128 MiB")


def test_spark_takes_one_limit_not_both():
    with pytest.raises(UsageError, match="not both"):
        batch_limits(GiB, run_files=2, run_bytes=MiB)


def test_the_report_says_each_run_of_equal_sizes_and_why():
    limits = {"max_bytes": 64 * MiB, "sized_cap": 128 * MiB, "state_budget": 256 * MiB}
    first = BatchSize(after_batch=0, max_bytes=128 * MiB, state_bytes=83 * MiB, input_bytes=63 * MiB)
    later = [BatchSize(after_batch=b, max_bytes=64 * MiB, state_bytes=(250 + b) * MiB, input_bytes=MiB) for b in (1, 2)]
    between = BatchSize(after_batch=3, max_bytes=100 * MiB, state_bytes=MiB // 2, input_bytes=64 * MiB)
    assert describe_sizes([first, *later, between], limits) == (
        "128 MiB for batch 1, the most (state 83 MiB after a batch of 63 MiB); "
        "64 MiB for batches 2-3, the default (state 252 MiB after a batch of 1.0 MiB); "
        "100 MiB for batch 4 (state 0.5 MiB after a batch of 64 MiB); the state's budget 256 MiB"
    )
