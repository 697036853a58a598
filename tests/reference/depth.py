"""How deeply landed lines nest objects and arrays, found without recursing (decode.py
quarantines a line deeper than the source's max_depth before any parser reads it).

A cheap bound for a whole Arrow batch first, in one pass over its bytes; an exact count
only for the few lines the bound cannot clear.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa


def maybe_deeper(raws: pa.Array, max_depth: int) -> np.ndarray | None:
    """Per line, whether it must be read the careful way for its depth: it may nest deeper
    than `max_depth` (it opens more objects and arrays than that), or does not start with
    `{` (whitespace, a byte order mark, not an object: rare). None when no line must.

    One pass over the batch's bytes: a line that starts with `{` opens at least one object,
    so no such line opens more than (all openers) - (such lines) + 1; only when that bound
    is over the limit is each line's count taken."""
    offsets = np.frombuffer(raws.buffers()[1], np.int64 if pa.types.is_large_binary(raws.type) else np.int32)
    offsets = offsets[raws.offset : raws.offset + len(raws) + 1]
    data = np.frombuffer(raws.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    starts = offsets[:-1] - offsets[0]
    lengths = np.diff(offsets)
    objects = (lengths > 0) & (data[np.minimum(starts, max(len(data) - 1, 0))] == 0x7B) if len(data) else lengths > 0
    # Counted one comparison at a time: two batch-sized temporaries at once cost several times more.
    opened = np.count_nonzero(data == 0x7B) + np.count_nonzero(data == 0x5B)  # { [
    if opened - np.count_nonzero(objects) + 1 <= max_depth:
        return None if objects.all() else ~objects
    nonempty = lengths > 0
    counts = np.zeros(len(lengths), np.int64)
    counts[nonempty] = np.add.reduceat(((data == 0x7B) | (data == 0x5B)).astype(np.int32), starts[nonempty])
    return ~objects | (counts > max_depth)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def nesting_depth(body: bytes) -> int:
    """How deeply a JSON text nests objects and arrays (brackets inside strings do not
    count), without recursing: a line of 100,000 `[` is 100,000 deep."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub(b"", body)):
        if bracket in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest
