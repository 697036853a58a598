"""Validation: Great Expectations on committed output, and checks on the run reports.

suite.py        expectation suites as data (expectations/<table>.yaml)
run_checks.py   rows balance and quarantine share, from the run reports
gx.py           Great Expectations glue
data_docs_views.py  the Data Docs' pages, every value a producer sent escaped
result.py       validation results and where they are stored
validation.py   validate a run's output, or the whole table
small_table.py  a small output read without Spark, for Great Expectations' pandas engine
"""
