"""How long Airflow takes to parse the dags folder, file by file.

    .venv/bin/python -m benchmarks.dag_parse [ROUNDS]   (default: 5)

Airflow's DAG processor parses every file again and again, so DAG files must be cheap.
Prints Airflow's own per-file durations and the total, best of ROUNDS, plus any heavy
module the DAG files imported. Figures, not assertions: compare them between versions.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("pyspark", "great_expectations", "boto3", "pandas", "pyarrow")


def main(rounds: int) -> None:
    os.environ.setdefault("AIRFLOW_HOME", str(REPO / "airflow_home"))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    started = time.monotonic()
    import airflow.providers.apache.spark.operators.spark_submit  # noqa: F401
    from airflow.dag_processing.dagbag import DagBag

    print(f"import Airflow and the Spark provider: {time.monotonic() - started:.2f}s (paid once per process)")
    before = set(sys.modules)
    best: dict[str, float] = {}
    totals = []
    for _ in range(rounds):
        for name in [m for m in sys.modules if m.startswith(("jobs", "unusual_prefix"))]:
            del sys.modules[name]  # parse from scratch, as a fresh DAG processor would
        started = time.monotonic()
        bag = DagBag(dag_folder=str(REPO / "dags"))
        totals.append(time.monotonic() - started)
        if bag.import_errors:
            sys.exit(f"import errors: {bag.import_errors}")
        for stat in bag.dagbag_stats:
            best[stat.file] = min(best.get(stat.file, 1e9), stat.duration.total_seconds())
    for file, seconds in sorted(best.items()):
        print(f"  {file}: {seconds * 1000:.0f} ms")
    print(f"dags folder: {min(totals) * 1000:.0f} ms (best of {rounds}), {len(bag.dags)} DAGs")
    heavy = sorted({m.split(".")[0] for m in set(sys.modules) - before} & set(HEAVY))
    print(f"heavy modules imported by the DAG files: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
