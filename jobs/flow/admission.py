"""How much of a backlog one batch takes: admission control a user need not think about.

A first run over a year of history, or a producer catching up after an outage, must not
become one batch the driver cannot hold (state for every key of the backlog, at once).
Each batch takes about `max_bytes` of new files (whole files, at least one), or, when
asked for instead, at most `max_files` new files (one or the other is given, not both).

The default: about a sixteenth of the JVM's heap per batch, 64 MiB with Spark's default
1 GiB driver. A batch's lines are parsed as they stream through; what stays is state,
about one entry per key of the batch, which the default state store keeps on the heap
for this batch and the two before it (RocksDB keeps it off the heap). A sixteenth leaves
room for that at about one key per event, the worst case of the benchmark (make bench).

By default, batches after a run's first are sized by what the pipeline keeps: after each
batch the landing source (io.triggeronce.jobs.source.LandingStream) reads the state the query
holds (its progress's memory per state operator) and the bytes the batch read, and takes
as many bytes next as would grow that state by at most what is left of a quarter of the
heap, had each byte the weight the last batch's had; never fewer than the default, never
more than an eighth of the heap (128 MiB at 1 GiB: on the benchmark's backlog, 256 MiB
batches were slower than 128, make bench). A windowed count whose state is a few MiB takes
the eighth; one key per event kept in state stays at the default. The run's report says
what was chosen after each batch (`batch_sizes`).

A batch by bytes takes at most `most_files` files too: however small the files, the driver
keeps a few entries for each file of a batch (its slice of a task, its tally, its entry in
the file log), about FILE_DRIVER_BYTES each. A sixteenth of the heap for them, as for the
bytes: a million one-line files in one batch ran a 1 GiB driver out of memory (make bench).

From the weakest to the strongest: the default, the declaration's `spark:` block, the
run's own options (`--max-bytes-per-trigger` or `--max-files-per-trigger`, or the DAG
run's params). A limit declared or given is kept for every batch: only the default is sized.

Spark counts a file by its size as listed. A gzip file's lines can be a hundred times that:
with new gzip files, a byte limit is divided by how much they inflate (`inflated`), so that
a batch holds about the limit in lines, not in gzip.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from jobs.units import UsageError

HEAP_SHARE = 16
SIZED_HEAP_SHARE = 8  # the most a sized batch takes
STATE_HEAP_SHARE = 4  # the most a sized batch lets the state grow to
MIN_BYTES = 8 * 2**20
FILE_DRIVER_BYTES = 2 * 2**10  # an allowance per file of a batch (docs/performance.md: a million files)
MIN_FILES = 1_000


@dataclass(frozen=True)
class Limits:
    max_files: int | None
    max_bytes: int | None
    chosen_by: str  # what set them: "default", "declaration" or "run"
    inflation: float = 1.0  # max_bytes is of gzip files whose lines are this many times larger
    # Sized batches (the default's): the most bytes a batch after the first takes, and the
    # most the state may hold; None: every batch takes max_bytes (or max_files).
    sized_cap: int | None = None
    state_budget: int | None = None
    most_files: int | None = None  # with max_bytes: the most files a batch takes

    def describe(self) -> str:
        size = f"at most {self.max_files:,} new files" if self.max_files else f"about {self.max_bytes / 2**20:,.0f} MiB"
        if self.inflation > 1:
            size = (
                f"about {self.max_bytes * self.inflation / 2**20:,.0f} MiB of lines "
                f"({self.max_bytes / 2**20:,.2f} MiB of gzip, which inflates up to {self.inflation:,.0f}x)"
            )
        if self.max_bytes and self.most_files:
            size += f", at most {self.most_files:,} files"
        sized = ""
        if self.sized_cap:
            sized = f", then sized by the state it keeps, up to {self.sized_cap * self.inflation / 2**20:,.0f} MiB"
        return f"{size} per batch ({self.chosen_by}){sized}"

    def passed_by(self, files: int, size: int) -> str | None:
        """How much more than one batch takes `files` new files of `size` bytes are, or None:
        what a `once` run, whose one batch Spark gives no limit, takes anyway."""
        most = self.max_files or self.most_files
        if most and files > most:
            return f"{files:,} new files, more than the {most:,} a batch takes"
        if self.max_bytes and size > self.max_bytes:
            return (
                f"{size / 2**20:,.0f} MiB of new files, more than the {self.max_bytes / 2**20:,.0f} MiB a batch takes"
            )
        return None


def inflated(limits: Limits, inflation: float) -> Limits:
    """The limits for new files whose lines are up to `inflation` times their size (gzip)."""
    if not limits.max_bytes or inflation <= 1:
        return limits
    cap = max(int(limits.sized_cap / inflation), 1) if limits.sized_cap else None
    return replace(limits, max_bytes=max(int(limits.max_bytes / inflation), 1), inflation=inflation, sized_cap=cap)


def default_limits(heap_bytes: int) -> Limits:
    """The limits for a JVM whose heap is `heap_bytes`: its batches sized after the first."""
    floor = max(heap_bytes // HEAP_SHARE, MIN_BYTES)
    cap = max(heap_bytes // SIZED_HEAP_SHARE, floor)
    budget = heap_bytes // STATE_HEAP_SHARE
    return Limits(None, floor, "default", sized_cap=cap, state_budget=budget, most_files=most_files(heap_bytes))


def most_files(heap_bytes: int) -> int:
    """The most files a batch by bytes takes, for a JVM whose heap is `heap_bytes`."""
    return max(heap_bytes // HEAP_SHARE // FILE_DRIVER_BYTES, MIN_FILES)


def batch_limits(
    heap_bytes: int,
    declared_files: int | None = None,
    declared_bytes: int | None = None,
    run_files: int | None = None,
    run_bytes: int | None = None,
) -> Limits:
    """The limits of a run: the strongest place that sets one wins."""
    if run_files and run_bytes:
        raise UsageError("give --max-files-per-trigger or --max-bytes-per-trigger, not both (Spark takes one)")
    if run_files or run_bytes:
        return Limits(run_files, run_bytes, "run", most_files=run_bytes and most_files(heap_bytes))
    if declared_files or declared_bytes:
        return Limits(
            declared_files, declared_bytes, "declaration", most_files=declared_bytes and most_files(heap_bytes)
        )
    return default_limits(heap_bytes)


class BatchSize(BaseModel):
    """What a sized batch took (the run report's `batch_sizes`, jobs/flow/admission.py): the
    batch after `after_batch` took about `max_bytes` of new files, chosen from the state the
    query held (`state_bytes`) once `after_batch` had read `input_bytes`."""

    after_batch: int
    max_bytes: int
    state_bytes: int
    input_bytes: int


def describe_sizes(sizes: list[BatchSize], limits: dict[str, Any]) -> str:
    """Each run of equal choices, and why ('128 MiB for batches 1-5, the most (state 3.1 MiB
    after a batch of 64 MiB; its budget 256 MiB)')."""
    groups: list[list[BatchSize]] = []
    for size in sizes:
        if groups and groups[-1][-1].max_bytes == size.max_bytes:
            groups[-1].append(size)
        else:
            groups.append([size])
    named = {limits.get("sized_cap"): ", the most", limits.get("max_bytes"): ", the default"}
    parts = []
    for group in groups:
        first, last = group[0].after_batch + 1, group[-1].after_batch + 1
        batches = f"batch {first}" if first == last else f"batches {first}-{last}"
        held = max(group, key=lambda s: s.state_bytes)
        parts.append(
            f"{_mib(group[0].max_bytes)} for {batches}{named.get(group[0].max_bytes, '')} "
            f"(state {_mib(held.state_bytes)} after a batch of {_mib(held.input_bytes)})"
        )
    budget = limits.get("state_budget")
    return "; ".join(parts) + (f"; the state's budget {_mib(budget)}" if budget else "")


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n < 10 * 2**20 else f"{n / 2**20:,.0f} MiB"
