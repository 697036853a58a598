"""The application file spark-submit runs: the same command line as `python -m jobs`.

It sits in a folder of its own because spark-submit puts the script's folder first on
sys.path; nothing here can shadow another module. The `jobs` package itself is
imported as installed (or from PYTHONPATH, or the --py-files the submit ships).
"""

import sys

from jobs.entry.python_daemon import prefer_installed_pyspark

prefer_installed_pyspark()  # before anything imports pyspark: from its package, not Spark's zip
from jobs.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
