"""Running a pipeline once: the lifecycle, and what it records and reports.

checkpoint.py  what Spark's checkpoint and sink log say (read only)
ledger.py      the pipeline's own files beside them (contract, accounts, Spark's counts)
progress.py    a line per batch as it completes
accounting.py  exact rows per batch: input = used + quarantined + late + duplicates
accountant.py  the run's accounts: batches accounted beside the query, stored, reported
report.py      the run report
runner.py      lock -> check -> recover -> query -> account -> report
failure.py     why a run failed, in one line (and, for a batch failing on its data, the way past it)
quarantine_file.py  a landed file quarantined by hand: the way past a batch that fails on its data
warnings.py    what a run that succeeded still gets wrong: a watermark ahead of now, most rows late,
               a quarantine share that jumped
"""
