"""What a reader of a Delta table owes: the upstream's rewrites its source passed over.

Delta's source reads the versions that added rows and passes over one that removed some (a
backfill's replacement of a range, its rollback, a rebuild's switch: skipChangeCommits,
jobs/flow/source.py), so the reader never fails or counts a row twice; but its table still
holds what it made of the rows that version replaced. Each such version is recorded in the
reader's ledger when a run meets it, and owed until it is redone:

    <ledger>/skipped.json   the upstream's versions passed over (or to be, by the next batch):
                            version, what its writer said, when met; and how far the log was looked at
    <ledger>/redone.json    the reader's backfills since: the range each redid, and through which
                            upstream version (or, in a cascade, which upstream backfill it follows)

A backfill run with its upstream's (`backfill --with-downstream`) redoes that backfill's
replacement and its rollback; a backfill of the reader alone redoes the versions of its
range up to the upstream's version it read. A rewrite of the whole table (a rebuild's
switch, or a version whose writer named no range) is owed until the reader is started
afresh. A run of a reader that owes is not a success: exit 7, its report's `owed` says what.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jobs.accounting.checkpoint import CheckpointLog
from jobs.lake import delta, delta_source, fs
from jobs.lake.layout import join
from jobs.units import jobs_command

SKIPPED = "skipped.json"
REDONE = "redone.json"


def record_skipped(checkpoint_log: CheckpointLog, ledger_uri: str) -> None:
    """Record the upstream's rewrites the source has passed over, or will on its next batch:
    each version since its first batch's snapshot that removed rows, looked at once."""
    said = _skipped(checkpoint_log, ledger_uri)
    if said is not None:
        fs.write_json(join(ledger_uri, SKIPPED), said)


def owed_now(checkpoint_log: CheckpointLog, ledger_uri: str, pipeline: str) -> list[str]:
    """What the next run would say it owes (`owed`, with the rewrites since the last run), recording nothing."""
    said = _skipped(checkpoint_log, ledger_uri) or fs.read_json_if_there(join(ledger_uri, SKIPPED)) or {}
    return _owed(said.get("skipped", []), fs.read_json_if_there(join(ledger_uri, REDONE)) or [], pipeline)


def _skipped(checkpoint_log: CheckpointLog, ledger_uri: str) -> dict[str, Any] | None:
    """skipped.json with the rewrites since it was last looked at; None when nothing is new."""
    planned = checkpoint_log.last_planned()
    if planned is None:
        return None  # no batch yet: its first reads the table as it is, rewrites and all
    table = checkpoint_log.landing
    said = fs.read_json_if_there(join(ledger_uri, SKIPPED)) or {"looked_through": None, "skipped": []}
    first = said["looked_through"]
    if first is None:  # the versions the first batch's snapshot held are read, not skipped
        first = checkpoint_log.delta_offset(checkpoint_log.first_planned()).version - 1
    newest = delta_source.newest_end(table).version - 1
    if newest <= first:
        return None
    at = datetime.now(UTC).isoformat(timespec="seconds")
    skipped = list(said["skipped"])
    for version in range(first + 1, newest + 1):
        if delta_source.rewrites(delta.commit(table, version)):
            entry = {"version": version, "said": delta.said(table, version), "met_at": at}
            switched = [
                e["version"] for e in skipped if e["said"].get("switch_to") == entry["said"].get("rollback_from")
            ]
            if entry["said"].get("rollback_from") and switched:  # what the rolled-back build appended, read
                between = range(switched[-1] + 1, version)
                entry["read_between"] = [v for v in between if delta_source.added_by(table, v)]
            skipped.append(entry)
    return {"looked_through": newest, "skipped": skipped}


def record_redone(ledger_uri: str, redone: dict[str, Any]) -> None:
    """A backfill of the reader that replaced (or published) its range: `backfill` (its id),
    `range` ({since, until}), and `through_version` (the upstream's version it read) or
    `cascade` (the upstream backfill's id it followed)."""
    done = fs.read_json_if_there(join(ledger_uri, REDONE)) or []
    fs.write_json(join(ledger_uri, REDONE), [*done, redone])


def owed(ledger_uri: str, pipeline: str) -> list[str]:
    """The upstream rewrites `pipeline` passed over and has not redone, each said in a line with what redoes it."""
    skipped = (fs.read_json_if_there(join(ledger_uri, SKIPPED)) or {}).get("skipped", [])
    return _owed(skipped, fs.read_json_if_there(join(ledger_uri, REDONE)) or [], pipeline)


def _owed(skipped: list[dict[str, Any]], redone: list[dict[str, Any]], pipeline: str) -> list[str]:
    undone = _undone(skipped)
    owing = [e for e in skipped if e["version"] not in undone and not any(_covers(r, e) for r in redone)]
    return [f"{_said(e)}; redo: {_redo(e, pipeline)}" for e in owing]


def _redo(skipped: dict[str, Any], pipeline: str) -> str:
    """The command that pays it: a backfill of its range (once the pipeline's runs have closed
    it), or a rebuild for a rewrite of the whole table."""
    span = (skipped.get("said") or {}).get("range")
    if span is None or skipped.get("read_between"):
        return jobs_command("rebuild", pipeline)
    return jobs_command("backfill", pipeline, "--since", span["since"], "--until", span["until"])


def _undone(skipped: list[dict[str, Any]]) -> set[int]:
    """The versions of a rewrite and its rollback, both passed over: the table is as the reader
    read it (a backfill and its rollback; a rebuild's switch and its rollback)."""
    said = {entry["version"]: entry.get("said") or {} for entry in skipped}
    pairs = [("backfill", "rollback_of"), ("switch_to", "rollback_from")]
    undone = set()
    read_between = {entry["version"] for entry in skipped if entry.get("read_between")}
    for version, says in said.items():
        for made, unmade in pairs:
            back = [v for v, other in said.items() if says.get(made) and other.get(unmade) == says[made]]
            if back and not read_between & set(back):
                undone |= {version, *back}
    return undone


def _covers(redone: dict[str, Any], skipped: dict[str, Any]) -> bool:
    said = skipped.get("said") or {}
    if redone.get("cascade") is not None:
        return redone["cascade"] in (said.get("backfill"), said.get("rollback_of"))
    span, through = said.get("range"), redone.get("through_version")
    if span is None or through is None or skipped["version"] > through:
        return False
    return redone["range"]["since"] <= span["since"] and span["until"] <= redone["range"]["until"]


def _said(skipped: dict[str, Any]) -> str:
    said = skipped.get("said") or {}
    if skipped.get("read_between"):
        return (
            f"version {skipped['version']} (the rollback of build {said.get('rollback_from')}) removed the rows of "
            f"versions {skipped['read_between']}, which this pipeline read: the same rows appended again are counted "
            "twice"
        )
    span = said.get("range")
    where = f"{span['since']} .. {span['until']}" if span else "the whole table"
    if said.get("backfill"):
        by = f"backfill {said['backfill']}"
    elif said.get("rollback_of"):
        by = f"the rollback of backfill {said['rollback_of']}"
    elif said.get("rollback_from") or said.get("switch_to"):
        by = "a rebuild's switch"
    else:
        by = "a writer that removed rows"
    return f"version {skipped['version']} ({by}) rewrote {where}"
