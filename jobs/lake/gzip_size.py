"""How large a gzip file is once decompressed: what its trailer says (an estimate, for sizing
batches), and what its members decompress to (for counting: a line passed over for its
length is found by it, jobs/accounting/long_lines.py)."""

from __future__ import annotations

import zlib

from jobs.lake import fs


def gzip_stated_size(uri: str, size: int) -> int:
    """What a gzip file says its size is once decompressed, from its trailer (one ranged read
    of 4 bytes): the size modulo 2^32, taken as the smallest that is not below the file's own
    `size`. An estimate: a file of concatenated members says only its last member's, and one
    past 4 GiB may say too little (`gzip_size` measures)."""
    filesystem, path = fs.filesystem_of(uri)
    with fs.errors(uri), filesystem.open_input_file(path) as handle:
        trailer = handle.read_at(4, max(size - 4, 0))
    stated = int.from_bytes(trailer, "little") if len(trailer) == 4 else 0
    return stated + 2**32 * max(0, -(-(size - stated) // 2**32))


DEFLATE_MOST = 1032  # deflate writes at least a byte for every 1032 it stands for
_MEMBER = b"\x1f\x8b\x08"  # how every gzip member starts (RFC 1952: magic, then deflate)


def gzip_size(uri: str, size: int) -> int:
    """A gzip file's size once decompressed, however many members it has: its trailer's when
    that can only mean one size (one member, and no second size within deflate's greatest ratio),
    else every member decompressed and counted."""
    stated = gzip_stated_size(uri, size)
    if size * DEFLATE_MOST < stated + 2**32 and not _more_than_one_member(uri):
        return stated
    return _decompressed_size(uri)


def _more_than_one_member(uri: str, chunk_size: int = 8 * 2**20) -> bool:
    """Whether a member starts anywhere after the first: a member's header that decompresses.
    Compressed bytes hold the header's 3 bytes by chance too (about once in 16 MiB), which fail
    to decompress; a real member never does, so none is missed."""
    offset, tail = 0, b""
    for chunk in fs.read_chunks(uri, 2**63, chunk_size, compressed=True):
        data = tail + chunk
        found = data.find(_MEMBER, 1 if offset == 0 else 0)
        while found >= 0:
            if _decompresses(uri, offset - len(tail) + found):
                return True
            found = data.find(_MEMBER, found + 1)
        offset, tail = offset + len(chunk), data[-2:]
    return False


def _decompresses(uri: str, at: int, probe: int = 64 * 2**10) -> bool:
    """Whether a gzip member starting at byte `at` decompresses (its first `probe` bytes)."""
    filesystem, path = fs.filesystem_of(uri)
    with fs.errors(uri), filesystem.open_input_file(path) as handle:
        data = handle.read_at(probe, at)
    try:
        zlib.decompressobj(31).decompress(data, 2**20)
    except zlib.error:
        return False
    return True


def _decompressed_size(uri: str) -> int:
    """The bytes every member of a gzip file decompresses to (what Hadoop's reader reads: it
    reads on past a member's end, as pyarrow's stream does)."""
    return sum(len(chunk) for chunk in fs.read_chunks(uri, 2**63))
