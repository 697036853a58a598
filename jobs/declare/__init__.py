"""The declaration model: what a pipeline says, checked on load (pydantic; no Spark).

units of a declaration   jobs/units.py (durations, names, sizes)
its parts                parts.py (source, enrichment, join, processor, output)
a team's own Python      code.py (a transform's function, a processor's class: found, imported, fingerprinted)
what it computes         computing.py (computed columns and where, window, keys, aggregates)
its expressions          expressions.py (its Spark SQL, read without Spark: fields, functions allowed)
its row rules            rules.py (Spark SQL checks on each record)
how it runs              operations.py (Spark sizes and state store, Airflow retries, retention)
groups of pipelines      groups.py (declared, or by schedule: run together in one Spark application)
the whole, by pattern    pipeline.py (a union over window, process, join, events)
reading YAML             load.py
pipelines that read pipelines  graph.py (`source: {table: ...}`: the table exists, no cycle, its event time)
every problem at once    problems.py (several problems of one check together, "did you mean")
a first one, proposed    profile.py (a sample of landed events, field by field), propose.py (the
                         declaration and suite it suggests: `python -m jobs profile`)
"""

from jobs.declare.load import DeclarationError, Declarations, from_mapping, load, load_all, load_each
from jobs.declare.pipeline import (
    EventsPipeline,
    JoinPipeline,
    Pipeline,
    PipelineBase,
    ProcessPipeline,
    WindowPipeline,
)

__all__ = [
    "DeclarationError",
    "Declarations",
    "EventsPipeline",
    "JoinPipeline",
    "Pipeline",
    "PipelineBase",
    "ProcessPipeline",
    "WindowPipeline",
    "from_mapping",
    "load",
    "load_all",
    "load_each",
]
