"""Stateful processors: per-key logic that windows and aggregates cannot express.

A `process` declaration names one, with its `keys` and `settings`. The process pattern
(jobs/flow/patterns/process.py) groups the usable events by the keys and hands each
group, with the state Spark keeps for that key in the checkpoint, to the processor's
function through `applyInPandasWithState`.

A processor is one module here (see base.py): a pydantic model of its settings, checked
when the declaration loads; what it emits and keeps ((name, type) pairs); whether it uses event-time
timeouts; and a pure function of (settings, keys) -> group function, unit-tested with a
fake state. Nothing here imports Spark, and pandas only inside the functions, so
declarations and the Airflow DAG files read settings and columns without them.

    base.py               what a processor is (Processor), its settings and columns
    own.py                a team's own processor class (transformWithStateInPandas): its base
    rack_status.py        a rack's status changes, from runs of high readings
    spending_sessions.py  spending sessions with an event-time timeout

Adding one to the product: a module like rack_status.py, and its PROCESSOR in the tuple
below. A team adds its own in its declarations folder instead (own.py, docs/python.md).
"""

from jobs.processors import rack_status, spending_sessions
from jobs.processors.base import Processor

PROCESSORS: dict[str, Processor] = {p.name: p for p in (rack_status.PROCESSOR, spending_sessions.PROCESSOR)}
