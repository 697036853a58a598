"""Running a pipeline once: the lifecycle, and what it records and reports.

runner.py           the run as named steps: lock -> check -> pending -> recover -> start -> watch -> settle -> audit
pending.py          what is new, read from Spark's logs before Spark starts (nothing new: no Spark)
context.py          what a run is given (RunOptions) and works with (RunContext, built once)
check.py            the declaration against the checkpoint, then the schema and the dimension
checkpoint.py       what Spark's checkpoint and sink log say (read only; file names as the product spells them)
ledger.py           the pipeline's own files beside them (contract, accounts, Spark's counts)
progress.py         a line per batch as it completes (StreamingQueryProgress)
accounts.py         a batch's counts -> its account: input = used + quarantined + late + duplicates (pure)
recount.py          counting a batch again by reading its files again
bookkeeper.py       when batches are accounted and when their accounts are stored
report.py           the run report
audit.py            after a run: output no batch committed, landed files never read
retention.py        landed files deleted or archived, as declared
files.py            the file ledger: which batch took which file, with its rows
failure.py          why a run failed, in one line (and, for a batch failing on its data, the way past it)
quarantine_file.py  a landed file quarantined by hand: the way past a batch that fails on its data
warnings.py         what a run that succeeded still gets wrong: a watermark ahead of now, most rows
                    late, a quarantine share that jumped
"""
