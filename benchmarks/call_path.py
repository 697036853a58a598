"""The call path from `python -m jobs run` to `writeStream.start()`: the product's frames on
the way (in every thread the run crosses), and the files they are in. A figure of how far a
newcomer follows a declaration before Spark starts its query, measured on a real run.

    python -m benchmarks.call_path        (a demo pipeline over one small file, in a temporary root)
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import traceback
from pathlib import Path

from pyspark.sql.streaming import DataStreamWriter

PACKAGE = str(Path(__file__).resolve().parent.parent / "jobs")


def _product_frames(stack: list[traceback.FrameSummary]) -> list[str]:
    return [
        f"{Path(f.filename).relative_to(Path(PACKAGE).parent)}:{f.name}"
        for f in stack
        if f.filename.startswith(PACKAGE)
    ]


def main() -> None:
    from jobs.cli import main as jobs_main

    seen: list[list[str]] = []
    start = DataStreamWriter.start

    def watched(self, *args, **kwargs):
        # The caller's thread, then any other thread of the product's that waits on it (a run
        # in a thread of its own has the command line's frames in the main thread).
        here = _product_frames(traceback.extract_stack())
        others = [
            _product_frames(traceback.extract_stack(frame))
            for ident, frame in sys._current_frames().items()
            if ident != threading.get_ident()
        ]
        seen.append([*[f for frames in others for f in frames], *here])
        return start(self, *args, **kwargs)

    DataStreamWriter.start = watched
    with tempfile.TemporaryDirectory() as root:
        landing = Path(root, "landing", "clickstream")
        landing.mkdir(parents=True)
        event = {"event_id": "e1", "user_id": "u1", "event": "click", "eventtimestamp": "2023-07-30T10:00:00Z"}
        (landing / "a.json").write_text(json.dumps(event) + "\n")
        code = jobs_main(["run", "clickstream", "--root", root, "--no-validate"])
    (path,) = seen
    files = sorted({frame.split(":")[0] for frame in path})
    print(json.dumps({"exit": int(code), "frames": len(path), "files": len(files), "path": path}, indent=2))


if __name__ == "__main__":
    main()
