"""Line numbers in a file Spark reads in blocks: the lines before a block, counted in the file."""

from __future__ import annotations

import random

import pytest

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
