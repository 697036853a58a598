"""Patterns: what a pipeline is, one module each, behind one interface (base.Pattern).

    base.py     the interface: every question about a pipeline its pattern answers
    window.py   watermarked event-time windows aggregated per key (optionally deduplicated)
    process.py  a stateful processor per key (jobs/processors/)
    join.py     a stream-stream join of two sources
    events.py   each usable event as it is

Adding a pattern: a module implementing Pattern, its declaration model in
jobs/declare/pipeline.py, and its name below.
"""

from jobs.declare import PipelineBase
from jobs.flow.patterns.base import Pattern
from jobs.flow.patterns.events import EventsPattern
from jobs.flow.patterns.join import JoinPattern
from jobs.flow.patterns.process import ProcessPattern
from jobs.flow.patterns.window import WindowPattern

PATTERNS: dict[str, type[Pattern]] = {
    "window": WindowPattern,
    "process": ProcessPattern,
    "join": JoinPattern,
    "events": EventsPattern,
}


def pattern_of(pipeline: PipelineBase) -> Pattern:
    return PATTERNS[pipeline.pattern](pipeline)


__all__ = ["PATTERNS", "Pattern", "pattern_of"]
