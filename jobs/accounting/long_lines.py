"""Lines too long to read, counted and quarantined all the same.

Spark's line reader holds a whole line before the decoder sees it: one line of 1.5 GiB ends
the JVM, batch after batch. Every session caps it (`READ_LIMIT`, Hadoop's
`mapreduce.input.linerecordreader.line.maxlength`: jobs/session.py), and Hadoop then passes
over a longer line without holding it, and without a word. Here, in the batch's account,
such a line is found: the bytes of the lines the decoder was handed fall short of the file's
(its size, or a gzip file's once decompressed: every member's) by at least the cap. Only
then is the file read again, in chunks, for its lines that long: each is counted and
quarantined (`record_too_large`, its first TOO_LARGE_KEPT bytes kept) at its line number,
and the numbers of the file's other quarantined lines move past it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from jobs.accounting.lines import lines_before
from jobs.flow.source import READ_LIMIT, RECORD_LIMIT, TOO_LARGE_KEPT
from jobs.flow.tally import FileCount, Files, Quarantined
from jobs.lake import fs, gzip_size

_LINE_END = re.compile(rb"[\r\n]")


def count_passed_over(files: Files) -> list[str]:
    """Add to each file's counts the lines Hadoop passed over; returns the files that had some."""
    found = []
    for path, count in files.items():
        if count.size_bytes is None or not _fell_short(path, count):
            continue
        long = list(_long_lines(path))
        if long:
            _add(path, count, long)
            found.append(path)
    return found


def _fell_short(path: str, count: FileCount) -> bool:
    """Whether the lines read of a file fall short of it by a line passed over, at least. Each
    line read has an end of a byte or two (the last may have none); one passed over is READ_LIMIT
    or more. A gzip file's size once decompressed costs a read of its trailer, unless even
    deflate's greatest ratio could not make it that much larger than what was read."""
    size, read = count.size_bytes, count.line_bytes + count.lines
    if path.endswith(".gz") and size:
        if size * gzip_size.DEFLATE_MOST - read < READ_LIMIT - 1:
            return False
        size = gzip_size.gzip_size(path, size)  # every member's, not what its trailer says
    return size - read >= READ_LIMIT - 1


def _add(path: str, count: FileCount, long: list[tuple[int, int, bytes]]) -> None:
    numbers = [number for number, _, _ in long]
    renumbered, before = [], {0: 0}  # lines of the blocks before a block, counted once each
    for q in count.quarantined:  # numbered without the lines passed over: move them past those
        if q.block_start not in before:
            before[q.block_start] = lines_before(path, q.block_start)
        number = q.line_in_block + before[q.block_start]
        for passed in numbers:
            number += passed <= number
        renumbered.append(Quarantined(0, number, q.line, q.reason, q.detail))
    for number, length, kept in long:
        detail = f"{length:,} bytes; the limit is {RECORD_LIMIT:,}; its first {TOO_LARGE_KEPT:,} are kept"
        renumbered.append(Quarantined(0, number, kept.decode(errors="replace"), "record_too_large", detail))
    count.quarantined = renumbered
    count.lines += len(long)
    count.records += len(long)
    count.line_bytes += sum(length for _, length, _ in long)


def _long_lines(path: str, chunk_size: int = 8 * 2**20) -> Iterator[tuple[int, int, bytes]]:
    """(line number, bytes, first bytes) of each line of the file that Hadoop's reader passes
    over (with its end: LF, CR LF or a lone CR, READ_LIMIT bytes or more); the file is read
    in chunks, a gzip file decompressed, and no line is held whole."""
    number, length, kept = 1, 0, bytearray()
    ended_by_cr = False  # the last chunk ended with a CR: its line's end is 1 byte, or 2 with an LF here
    for chunk in fs.read_chunks(path, 2**63, chunk_size):
        start = 0
        if ended_by_cr:
            ends_with = 2 if chunk[:1] == b"\n" else 1
            if length + ends_with >= READ_LIMIT:
                yield number, length, bytes(kept)
            number, length, kept, start, ended_by_cr = number + 1, 0, bytearray(), ends_with - 1, False
        for end in _LINE_END.finditer(chunk, start):
            at = end.start()
            if at < start:
                continue  # the LF of a CR LF, ended with its CR
            length += at - start
            kept += chunk[start : min(at, start + max(TOO_LARGE_KEPT - len(kept), 0))]
            if at + 1 == len(chunk) and chunk[at:] == b"\r":
                ended_by_cr, start = True, len(chunk)
                break
            ends_with = 2 if chunk[at : at + 2] == b"\r\n" else 1
            if length + ends_with >= READ_LIMIT:
                yield number, length, bytes(kept)
            number, length, kept, start = number + 1, 0, bytearray(), at + ends_with
        length += len(chunk) - start
        kept += chunk[start : start + max(TOO_LARGE_KEPT - len(kept), 0)]
    if length + ended_by_cr >= READ_LIMIT:  # the last line (with no end, or a CR at the end)
        yield number, length, bytes(kept)
