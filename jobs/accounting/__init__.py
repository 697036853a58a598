"""Accounting: every landed row, exactly once, in a batch's account (no row unaccounted).

Spark's checkpoint says which files each batch read and which output files it committed;
the query's tally counts each file's rows as it reads them (jobs/flow/tally.py); an account
is a batch's balance, `input = used + quarantined + filtered + late + duplicates`, per batch and per
landed file; the ledger is where the pipeline keeps its accounts and its own records,
beside Spark's checkpoint. The words are the glossary's (docs/glossary.md).

checkpoint.py       what Spark's checkpoint and sink log say (read only; file names as the product spells them)
source_log.py       the landing source's file log: which files were taken, by folder through its index
ledger.py           the pipeline's own files beside them (contract, accounts, Spark's counts)
accounts.py         a batch's counts -> its account (pure), and the account's stored form
batches.py          when a run's batches are accounted, and when their accounts are stored
read_again.py       a batch accounted by reading its files again through the same flow
lines.py            a quarantined line's number in its file, from where Spark's task began reading
long_lines.py       lines too long for the reader, which passed them over: counted and quarantined
file_ledger.py      the file ledger: which batch took which file, with its rows (python -m jobs files)
quarantine_file.py  a landed file quarantined by hand: the way past a batch that fails on its data
run_view.py         what accounting needs of a run (the runner's RunContext has it)
"""
