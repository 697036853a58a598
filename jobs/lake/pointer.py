"""A `_CURRENT.json`: which of several versions of something is current, in one atomic write
(a rename on a local disk, one PUT on S3), so readers see the one before or the new one.

There are two, in one format:

    <publish_to>/_CURRENT.json               the published backfill readers read (jobs/backfill/versions.py)
    <root>/builds/<pipeline>/_CURRENT.json   the build a pipeline's runs use (jobs/lake/builds.py)

    {"id": the backfill's or the build's, "path": what readers read (a version's table, a
     build's table), "at": when it became current, ...what its writer says of it...,
     "previous": the pointer it replaced, when one is kept}

Pointers written before 2026-11-27 named the id `version` (a backfill's) or `build`, the
time `published_at` or `switched_at`, and a build's table `output`; they read the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jobs.lake import fs
from jobs.lake.layout import join

NAME = "_CURRENT.json"


@dataclass(frozen=True)
class Pointer:
    id: str  # of what is current: a backfill's id, a build's
    path: str  # what readers read
    at: str  # when it became current
    about: dict[str, Any] = field(default_factory=dict)  # what else its writer says of it
    previous: Pointer | None = None  # the pointer it replaced, when kept (a build's rollback goes back to it)

    def to_dict(self) -> dict[str, Any]:
        said = {"id": self.id, "path": self.path, "at": self.at, **self.about}
        return said | ({"previous": self.previous.to_dict()} if self.previous is not None else {})

    @classmethod
    def from_dict(cls, said: dict[str, Any]) -> Pointer:
        rest = dict(said)
        ident = _first(rest, "id", "version", "build")  # the older names, a backfill's then a build's
        at = _first(rest, "at", "published_at", "switched_at")
        path = _first(rest, "path", "output")
        previous = rest.pop("previous", None)
        return cls(ident, path, at, rest, cls.from_dict(previous) if previous else None)


def _first(said: dict[str, Any], *names: str) -> Any:
    """The value of the first of `names` there, each of them taken out."""
    found = [said.pop(name) for name in names if name in said]
    return found[0] if found else None


def read(folder: str) -> Pointer | None:
    """The pointer in `folder`, if there is one."""
    said = fs.read_json_if_there(join(folder, NAME))
    return Pointer.from_dict(said) if said else None


def write(folder: str, pointer: Pointer) -> None:
    """Make `pointer` current in `folder`, in one atomic write."""
    fs.write_json(join(folder, NAME), pointer.to_dict())
