"""Running a pipeline once: the lifecycle, its events, and its run report.

runner.py           the run as named steps: lock -> preflight -> pending -> recover -> start -> watch -> settle -> audit
pending.py          what is new, read from Spark's logs before Spark starts (nothing new: no Spark)
application.py      the Spark application of some run requests or a command: whether it starts, and with what
arrivals.py         what an on-arrival watcher says, and when: (listing, cursor, now) -> (event, cursor)
context.py          what a run works with (RunContext, built once from its request: jobs/request.py)
events.py           what a run says as it goes: started, batch committed, report stored, finished
lineage.py          whether a run says it in OpenLineage too: a transport configured (OpenLineage's ways)
lineage_events.py   the OpenLineage events of a run: start, complete, fail or abort, its datasets as OpenLineage names them
stop.py             a stop request (Ctrl-C, SIGTERM), read by every run in progress
preflight.py        the declaration against the checkpoint, then the schema and the dimension
progress.py         a line per batch as it completes (StreamingQueryProgress)
report.py           the run report: what one run did, in numbers a person can check
status.py           how a run ended (succeeded, failed, refused, stopped), as its report and events say
audit.py            after a run: output no batch committed, landed files never read
retention.py        landed files deleted or archived, as declared
readers.py          which pipelines read a landing: one, unless each declares it shared
owed.py             what a reader of a Delta table owes: the upstream's rewrites it passed over, until redone
maintain.py         a Delta table's upkeep: compaction of closed partitions, vacuum
failure.py          why a run failed, in one line (and, for a batch failing on its data, the way past it)
messages.py         a message whole, and in brief where one line is wanted (the console, a report's cell)
warnings.py         what a run that succeeded still gets wrong: a watermark ahead of now, most rows
                    late, a quarantine share that jumped

Its accounts (what each batch read, exactly) are jobs/accounting/.
"""
