"""The application file spark-submit runs: the same command line as `python -m jobs`.

It sits alone in its folder because spark-submit puts the script's folder first on
sys.path; here nothing there can shadow another module. The `jobs` package itself is
imported as installed (or from PYTHONPATH, or the --py-files the submit ships).
"""

import sys

from jobs.cli import main

if __name__ == "__main__":
    sys.exit(main())
