"""Entry points for processes that start the command line without `python -m jobs` (spark-submit)."""
