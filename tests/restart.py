"""A restart, for the tests: one fresh process (a new JVM) runs each named pipeline once
through the command line, as a user would; all it knows comes from the checkpoints.

    python -m tests.restart ROOT PIPELINE...

Prints {pipeline: exit code} as JSON on its last line; exits with the highest code.
"""

from __future__ import annotations

import json
import sys

from jobs.cli import main


def restart(root: str, pipelines: list[str]) -> dict[str, int]:
    return {name: int(main(["run", name, "--root", root])) for name in pipelines}


if __name__ == "__main__":
    codes = restart(sys.argv[1], sys.argv[2:])
    print(json.dumps(codes))
    sys.exit(max(codes.values(), default=0))
