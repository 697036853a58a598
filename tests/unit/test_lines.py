"""Line numbers in a file Spark reads in blocks: the lines before a block, counted in the file;
and the lines too long for the reader, found in the file."""

from __future__ import annotations

import os
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.accounting.lines import lines_before


@pytest.mark.parametrize("chunk_size", [1, 2, 7, 8 * 2**20])
def test_lines_before_a_block_are_the_lines_that_start_at_or_before_it(tmp_path, chunk_size):
    rng = random.Random(3)
    body, starts = b"", []
    for _ in range(60):
        starts.append(len(body))
        # A blank line after a lone CR must not end in LF: that would be one CR LF.
        line = b"x" * rng.randrange(0 if not body.endswith(b"\r") else 1, 5)
        body += line + rng.choice([b"\n", b"\r\n", b"\r"])
    path = tmp_path / "f.json"
    path.write_bytes(body)
    for offset in range(1, len(body)):
        # Built, not parsed: the line starts are known from how the file was made.
        expected = sum(1 for start in starts if start <= offset)
        assert lines_before(str(path), offset, chunk_size) == expected, offset


@settings(
    max_examples=int(os.environ.get("JOBS_HYPOTHESIS_EXAMPLES", "150")) * 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.binary(max_size=40).map(lambda b: bytes(b"ab\r\n"[x % 4] for x in b)), chunk=st.integers(1, 9))
def test_lines_too_long_for_the_reader_are_found_as_hadoop_splits_them(tmp_path_factory, monkeypatch, data, chunk):
    """The lines Hadoop's reader passes over (its bytes with their end, LF, CR LF or a lone CR,
    at the cap or more), found in any chunking: the reference splits the whole file at once."""
    from jobs.accounting import long_lines

    monkeypatch.setattr(long_lines, "READ_LIMIT", 6)
    path = tmp_path_factory.mktemp("long") / "f.json"
    path.write_bytes(data)
    expected, start, number = [], 0, 1
    for end in re.finditer(rb"\r\n|\r|\n", data):
        if end.end() - start >= 6:
            expected.append((number, end.start() - start))
        start, number = end.end(), number + 1
    if start < len(data) and len(data) - start >= 6:
        expected.append((number, len(data) - start))
    assert [(n, length) for n, length, _ in long_lines._long_lines(str(path), chunk)] == expected
