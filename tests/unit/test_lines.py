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


def test_a_line_passed_over_is_counted_quarantined_and_the_others_numbered_past_it(tmp_path, monkeypatch):
    """What the decoder was handed of a file with a line too long for the reader (lines 1, 3
    and 4 of 4, numbered 1 to 3), made whole: the long line counted and quarantined at 2, the
    malformed one moved from 2 to 3."""
    from jobs.accounting import long_lines
    from jobs.flow.tally import FileCount, Quarantined

    monkeypatch.setattr(long_lines, "READ_LIMIT", 10)
    path = tmp_path / "f.json"
    path.write_bytes(b'{"a":1}\n' + b"x" * 20 + b"\n{bad\n" + b'{"a":2}\n')
    count = FileCount(size_bytes=path.stat().st_size, lines=3, line_bytes=7 + 4 + 7, records=3)
    count.quarantined = [Quarantined(0, 2, "{bad", "malformed_json", "JSON is malformed")]

    assert long_lines.count_passed_over({str(path): count}) == [str(path)]
    assert (count.lines, count.records, count.line_bytes) == (4, 4, 38)
    assert [(q.line_in_block, q.reason) for q in count.quarantined] == [(3, "malformed_json"), (2, "record_too_large")]
    assert count.quarantined[1].line == "x" * 20
    untouched = FileCount(size_bytes=path.stat().st_size, lines=4, line_bytes=38, records=4)
    assert long_lines.count_passed_over({str(path): untouched}) == []  # nothing fell short
