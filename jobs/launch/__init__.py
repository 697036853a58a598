"""What a command or an Airflow task starts: one pipeline's run, then its validation; or
several pipelines' runs in one Spark application, each validated in it.

single.py   one pipeline: its run (jobs/run/), then its validation (jobs/validate/), as one outcome
group.py    several pipelines' runs at once in one application, each with its own outcome
"""

from jobs.launch.group import run_group
from jobs.launch.single import Member, run_and_validate

__all__ = ["Member", "run_and_validate", "run_group"]
