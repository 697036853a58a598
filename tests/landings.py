"""Generated landings (issue 69): regular files, links in and out, loops, special files, names
with every byte a file system allows, S3 keys with odd segments; and, for each, the files a run
may take, computed here from how the landing was made, not by the code under test.

Used by tests/unit/test_landing_listing.py (the product's listing, many examples, no Spark) and
tests/integration/test_landing_boundary.py (Spark's listing agrees, a few examples).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

# A name: any byte but '/' and NUL, as the file system stores it.
_BYTE = st.integers(1, 255).filter(lambda b: b != ord("/"))
NAMES = st.lists(_BYTE, min_size=1, max_size=12).map(bytes).filter(lambda name: name not in (b".", b".."))
KINDS = ("file", "folder", "link_out_file", "link_out_folder", "loop", "link_in_file", "fifo")


@dataclass(frozen=True)
class Entry:
    path: tuple[bytes, ...]  # names from the landing down
    kind: str


ENTRIES = st.lists(
    st.builds(Entry, st.lists(NAMES, min_size=1, max_size=3).map(tuple), st.sampled_from(KINDS)), max_size=12
)


def readable(path: tuple[bytes, ...]) -> bool:
    """Whether a run may take a file at this path: no name hidden ('.', '_'), every name text
    (UTF-8: what Spark's JVM can open)."""
    for name in path:
        if name[:1] in (b".", b"_"):
            return False
        try:
            name.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def make(root: Path, entries: list[Entry]) -> tuple[Path, set[str]]:
    """The landing `root/landing` built from `entries` (and a file and a folder beside it that
    links point at); the locations of the regular files a run may take, as the product names them."""
    landing, outside = root / "landing", root / "outside"
    landing.mkdir(parents=True)
    (outside / "folder").mkdir(parents=True)
    (outside / "secret.json").write_text('{"outside": 1}\n')
    (outside / "folder" / "x.json").write_text('{"outside": 2}\n')
    base = os.fsencode(landing)
    expected: set[str] = set()
    for entry in entries:
        where = os.path.join(base, *entry.path)
        parent = os.path.dirname(where)
        if os.path.lexists(where) or not _a_folder_on_the_way(base, parent):
            continue  # taken already, or under something that is not a folder
        os.makedirs(parent, exist_ok=True)
        if entry.kind == "file":
            with open(where, "wb") as file:
                file.write(b'{"n": 1}\n')
            if readable(entry.path):
                expected.add(os.fsdecode(where))
        elif entry.kind == "folder":
            os.makedirs(where)
        elif entry.kind == "link_out_file":
            os.symlink(os.fsencode(outside / "secret.json"), where)
        elif entry.kind == "link_out_folder":
            os.symlink(os.fsencode(outside / "folder"), where)
        elif entry.kind == "loop":
            os.symlink(b".", where)
        elif entry.kind == "link_in_file":
            os.symlink(b"..", where)  # the folder above, from inside: a loop too
        else:
            os.mkfifo(where)
    return landing, expected


def _a_folder_on_the_way(base: bytes, parent: bytes) -> bool:
    """Every existing step from the landing to `parent` is a real folder (not a file, a link, a fifo)."""
    step = base
    for name in os.path.relpath(parent, base).split(b"/") if parent != base else []:
        step = os.path.join(step, name)
        if os.path.lexists(step) and (os.path.islink(step) or not os.path.isdir(step)):
            return False
    return True


# S3: keys under a landing's prefix, some with empty, '.' or '..' segments.
_SEGMENT = st.sampled_from(["", ".", "..", "a", "b", "_hidden", ".dot", "c d", "e%20f", "x.json"])
KEYS = st.lists(st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join), max_size=12)


def key_taken(relative: str) -> bool:
    """Whether a run may take the object at this key below the landing: not a folder's marker,
    no hidden segment, no empty, '.' or '..' segment."""
    segments = relative.split("/")
    if relative.endswith("/") or any(s in ("", ".", "..") for s in segments):
        return False
    return not any(s.startswith((".", "_")) for s in segments)
