"""python -m jobs: the command line (jobs/cli/)."""

import sys

from jobs.cli import main

sys.exit(main())
