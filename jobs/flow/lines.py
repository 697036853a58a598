"""Line numbers as in the landed file, for the quarantine.

Spark reads a large file in parts (blocks), each by one task, in order: the decoder
numbers the lines of each block from 1 (jobs/flow/decode.py). A block that starts at
byte 0 (every file smaller than a block, and every compressed file) needs nothing more.
Lines of a later block are numbered on from the lines before it, which `InFile` counts in
the file itself, once per block, and only for blocks that have quarantined records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from jobs.columns import BLOCK_START, LINE_NUMBER, SOURCE_FILE


def lines_before(uri: str, offset: int, chunk_size: int = 8 * 2**20) -> int:
    """How many lines of the file (`uri` as Spark names it) Spark's line reader gives the
    blocks before the one that starts at byte `offset` (> 0): the lines that start at or before it.

    Hadoop's reader ends a line at LF, CR LF or a lone CR; the block before reads on to the
    end of a line that crosses `offset`, and so also takes a line that starts exactly there.
    """
    from jobs.lake import fs  # in Spark's Python workers, only when a block needs it
    from jobs.lake.layout import from_spark

    newlines = returns = pairs = position = 0
    previous = b""
    # Bytes 0..offset: whether a CR just before `offset` is a lone one depends on the next.
    for chunk in fs.read_chunks(from_spark(uri), offset + 1, chunk_size):
        before = chunk[: offset - position]
        newlines += before.count(b"\n")
        returns += before.count(b"\r")
        pairs += (previous + chunk).count(b"\r\n")
        previous, position = chunk[-1:], position + len(chunk)
    return 1 + newlines + returns - pairs


@dataclass(frozen=True)
class InFile:
    """For `mapInArrow`: rows with SOURCE_FILE, BLOCK_START and LINE_NUMBER counted in the
    block -> the same rows without BLOCK_START, LINE_NUMBER counted in the file."""

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        before: dict[tuple[str, int], int] = {}  # per block, counted once per task
        for batch in batches:
            shifts = []
            files, starts = batch.column(SOURCE_FILE).to_pylist(), batch.column(BLOCK_START).to_pylist()
            for file, start in zip(files, starts, strict=True):
                if start and (file, start) not in before:
                    before[file, start] = lines_before(file, start)
                shifts.append(before[file, start] if start else 0)
            numbers = pc.add(batch.column(LINE_NUMBER), pa.array(shifts, pa.int64()))
            names = [n for n in batch.schema.names if n != BLOCK_START]
            columns = [numbers if n == LINE_NUMBER else batch.column(n) for n in names]
            yield pa.RecordBatch.from_arrays(columns, names=names)
