"""After a run: what the folders hold that Spark's logs do not say, made plain.

Output files the sink log does not list are removed, so that readers which list the table
folder read the committed rows only: files no batch committed (a run died between writing
a batch and committing it), and files past the table's declared retention, which Spark's
sink log dropped when it compacted.

Landed files the landing source will not read are named in the run report. It takes each
name once (as Auto Loader does by default, `allowOverwrites=false`): a file rewritten in place
after it was read is not read again, since its earlier rows are already counted and reading it
again would count them twice. That is reported after each run, with the files' names, so that
nothing is skipped silently. To have such a file read, land its content under a new name. (A
new name is read whatever its modification time: the source's log is an index, not a window
of recent times as Spark's own file source keeps with `maxFileAge`.)
"""

from __future__ import annotations

import logging
import time
from typing import NamedTuple

from pydantic import BaseModel, Field

from jobs.accounting.checkpoint import CheckpointLog
from jobs.accounting.source_log import TakenFiles
from jobs.lake import fs, listings
from jobs.lake.layout import is_s3
from jobs.units import printable


class SkippedFiles(BaseModel):
    # Landed more than 7 days before the newest taken, which Spark's own file source passed over
    # (reports of runs before the product's source; a new name is read now, whatever its time).
    too_old: list[str] = Field(default_factory=list)
    overwritten: list[str] = Field(default_factory=list)  # changed after they were read
    # In the landing but not a regular file inside it (a link, an S3 key with a '..' segment:
    # jobs/lake/fs.py Listing) -> why: never followed, read or counted.
    not_files: dict[str, str] = Field(default_factory=dict)

    def __bool__(self) -> bool:
        """Files never read that were landed as files (`not_files` is a warning of its own:
        jobs/run/warnings.py)."""
        return bool(self.too_old or self.overwritten)

    def describe(self) -> str:
        parts = []
        if self.too_old:
            parts.append(
                f"{len(self.too_old)} landed more than 7 days older than the newest "
                f"(Spark's maxFileAge): {file_names(self.too_old)}"
            )
        if self.overwritten:
            parts.append(f"{len(self.overwritten)} changed after they were read: {file_names(self.overwritten)}")
        return "files never read: " + "; ".join(parts) + " (land them again under new names)"


def file_names(uris: list[str], shown: int = 5, *, whole: bool = False) -> str:
    """'a.json, b.json and 3 more' (`whole`: each location whole), control characters escaped."""
    names = [printable(uri if whole else uri.rsplit("/", 1)[-1]) for uri in uris[:shown]]
    return ", ".join(names) + (f" and {len(uris) - shown} more" if len(uris) > shown else "")


class StrayOutput(NamedTuple):
    uncommitted: int
    expired: int


def remove_stray_output(checkpoint_log: CheckpointLog, retention_s: int | None, *, log: logging.Logger) -> StrayOutput:
    """Remove the output files the sink log does not list (once no query writes): those
    older than the table's retention expired, the others were never committed."""
    stray = checkpoint_log.uncommitted_output_files()
    expired_before_ms = (time.time() - retention_s) * 1000 if retention_s else None
    written_ms = listings.modification_times(checkpoint_log.output) if stray and expired_before_ms else {}
    expired = [uri for uri in stray if expired_before_ms and written_ms.get(uri, expired_before_ms) < expired_before_ms]
    for uri in stray:
        folder, name = uri.rsplit("/", 1)
        fs.remove_file(uri)
        fs.remove_file(f"{folder}/.{name}.crc")  # Hadoop's checksum beside a local file
    found = StrayOutput(len(stray) - len(expired), len(expired))
    if found.uncommitted:
        log.info("  removed %d output file(s) a batch wrote but never committed", found.uncommitted)
    if found.expired:
        log.info("  removed %d output file(s) past the table's retention (no longer in the sink log)", found.expired)
    return found


def skipped_files(
    landings: list[str],
    checkpoint_log: CheckpointLog,
    listed: tuple[dict[str, int], ...] | None = None,
    not_files: dict[str, str] | None = None,
) -> tuple[SkippedFiles, list[TakenFiles]]:
    """Files under each source's landing that the source has taken and will never read again
    (rewritten since), and per source, what it has taken of the folders listed.

    `listed`: what the run listed before Spark started (jobs/run/pending.py): each landing's
    files as listed then are judged against the index of their folders, so that a long history
    is neither listed nor read whole. A file landed during the run is the next run's to judge,
    as it is the next run's to read."""
    skipped = SkippedFiles(not_files=dict(sorted((not_files or {}).items())))
    taken_per_source = []
    for source, landing in enumerate(landings):
        if listed is not None:
            files = listed[source]
        else:
            found = listings.listing(landing)
            files = {uri: mtime_ms for uri, (_, mtime_ms) in found.files.items()}
            skipped.not_files |= found.skipped
        taken = checkpoint_log.source_log(source, landing).taken_in(files)
        skipped.overwritten += _overwritten(files, taken)
        taken_per_source.append(taken)
    return skipped, taken_per_source


def _overwritten(files: dict[str, int], taken: TakenFiles) -> list[str]:
    """`files`: the landing's files -> modification times; `taken`: what the source took, with
    its modification times then: those changed since."""
    # S3 keeps modification times to the second; a local disk, to the millisecond here.
    return [
        uri
        for uri, mtime in files.items()
        if (was := taken.get(uri)) is not None and abs(mtime - was) >= (1000 if is_s3(uri) else 1)
    ]
