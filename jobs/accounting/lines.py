"""Line numbers as in the landed file, for the quarantine.

Spark reads a large file in parts (blocks), each by one task, in order: the decoder
numbers the lines of each block from 1 (jobs/flow/functions.py). A block that starts at
byte 0 (every file smaller than a block, and every compressed file) needs nothing more.
Lines of a later block are numbered on from the lines before it, which `lines_before`
counts in the file itself, once per block, and only for blocks that have quarantined
records (jobs/accounting/batches.py).
"""

from __future__ import annotations

from jobs.lake import fs


def lines_before(path: str, offset: int, chunk_size: int = 8 * 2**20) -> int:
    """How many lines of the file at `path` Spark's line reader gives the
    blocks before the one that starts at byte `offset` (> 0): the lines that start at or before it.

    Hadoop's reader ends a line at LF, CR LF or a lone CR; the block before reads on to the
    end of a line that crosses `offset`, and so also takes a line that starts exactly there.
    """

    newlines = returns = pairs = position = 0
    previous = b""
    # Bytes 0..offset: whether a CR just before `offset` is a lone one depends on the next.
    for chunk in fs.read_chunks(path, offset + 1, chunk_size):
        before = chunk[: offset - position]
        newlines += before.count(b"\n")
        returns += before.count(b"\r")
        pairs += (previous + chunk).count(b"\r\n")
        previous, position = chunk[-1:], position + len(chunk)
    return 1 + newlines + returns - pairs
