"""The application spark-submit runs: the same command line as `python -m jobs`.

spark-submit puts this file's folder (jobs/) first on sys.path; the repository root
goes there instead, so `jobs` imports as a package and its modules shadow nothing.
"""

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parent.parent)

from jobs.__main__ import main  # noqa: E402 - needs the path set above

if __name__ == "__main__":
    sys.exit(main())
