"""Running a pipeline once: the lifecycle, its outcome, and its run report.

runner.py           the run as named steps: lock -> check -> pending -> recover -> start -> watch -> settle -> audit
pending.py          what is new, read from Spark's logs before Spark starts (nothing new: no Spark)
context.py          what a run is given (RunOptions) and works with (RunContext, built once)
check.py            the declaration against the checkpoint, then the schema and the dimension
progress.py         a line per batch as it completes (StreamingQueryProgress)
report.py           the run report: what one run did, in numbers a person can check
audit.py            after a run: output no batch committed, landed files never read
retention.py        landed files deleted or archived, as declared
maintain.py         a Delta table's upkeep: compaction of closed partitions, vacuum
failure.py          why a run failed, in one line (and, for a batch failing on its data, the way past it)
outcome.py          how a run ended: its status and exit code, whatever ended it
warnings.py         what a run that succeeded still gets wrong: a watermark ahead of now, most rows
                    late, a quarantine share that jumped

Its accounts (what each batch read, exactly) are jobs/accounting/.
"""
