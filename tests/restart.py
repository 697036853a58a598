"""A restart, for the tests: one fresh process (a new JVM) runs each named pipeline once
through the command line, as a user would; all it knows comes from the checkpoints.

    python -m tests.restart [--no-validate] ROOT PIPELINE...

Prints {pipeline: exit code} as JSON on its last line; exits with the highest code.
"""

from __future__ import annotations

import json
import sys

from jobs.cli import main


def restart(root: str, pipelines: list[str], options: list[str]) -> dict[str, int]:
    # One session for all of them: every one's table format (and s3a's, for a bucket) from its start.
    from jobs import declare
    from jobs.lake.layout import Locations
    from jobs.run.application import Application

    if pipelines:
        located = [Locations.resolve(name, root=root) for name in pipelines]
        Application.for_command("jobs-restart", map(declare.load, pipelines), located).session()
    return {name: int(main(["run", name, "--root", root, *options])) for name in pipelines}


if __name__ == "__main__":
    options = [arg for arg in sys.argv[1:] if arg == "--no-validate"]
    root, *pipelines = [arg for arg in sys.argv[1:] if arg not in options]
    codes = restart(root, pipelines, options)
    print(json.dumps(codes))
    sys.exit(max(codes.values(), default=0))
