"""The one door of a run: what a command or an Airflow task starts with a run request
(jobs/request.py): one pipeline's run, then its validation; or several pipelines' runs in
one Spark application, each validated in it. Both yield the runs' events.

execute.py  one request: its run (jobs/run/), then its validation (jobs/validate/), its events
group.py    several requests at once in one application, each with its own events
"""

from jobs.launch.execute import execute, finished_of
from jobs.launch.group import execute_group

__all__ = ["execute", "execute_group", "finished_of"]
