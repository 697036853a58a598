"""Two builds of a pipeline over the same landed rows, compared at a rebuild's switch: the
share of its rows the new build quarantines (far above the build in use's, the declaration
likely misreads the events: not switched to unless accepted), and the lines the build in use
quarantined that the new one uses."""

from __future__ import annotations

from pyspark.sql import SparkSession

from jobs.lake import fs
from jobs.lake.layout import Locations, own_root
from jobs.run.report import load_reports
from jobs.validate.run_checks import top_reason

# A new build that quarantines a share of its input rows this much above the build in use's
# (0.10: ten percentage points) is not switched to unless the rebuild accepts it.
QUARANTINE_RISE = 0.10


def quarantine_refusal(name: str, root: str, build_id: str, in_use: Locations, build: Locations) -> str | None:
    """Why not to switch when the new build quarantined a share of its input rows QUARANTINE_RISE
    above the build in use's (its runs' reports, those retention kept), or used none of them."""
    new = [r for r in load_reports(build.runs) if r.input_rows]
    old = [r for r in load_reports(in_use.runs) if r.input_rows]
    new_rows, new_quarantined = sum(r.input_rows for r in new), sum(r.quarantined_rows for r in new)
    if not new_rows:
        return None
    old_rows, old_quarantined = sum(r.input_rows for r in old), sum(r.quarantined_rows for r in old)
    new_share = new_quarantined / new_rows
    old_share = old_quarantined / old_rows if old_rows else 0.0
    used_none = new_quarantined == new_rows
    if new_share - old_share < QUARANTINE_RISE and not used_none:
        return None
    in_use_said = f"; the build in use {old_quarantined} of {old_rows} ({old_share:.1%})" if old_rows else ""
    folder = own_root(root, "builds", name, build_id)
    return (
        f"build {build_id} quarantined {new_quarantined} of the {new_rows} rows it read ({new_share:.1%}"
        f"{top_reason(new)}){in_use_said}: not switched to it, the build in use "
        f"goes on. The declaration may misread the events (a field's type, a rule): fix it and run `python -m "
        f"jobs rebuild {name}` again (a new build; this one's folder, {folder}, can then be deleted), or add "
        f"--accept-quarantine to switch to this build anyway (its quarantine: {build.quarantine})"
    )


def now_used(spark: SparkSession, in_use: Locations, build: Locations, taken: set[str]) -> int:
    """Lines the build in use quarantined that the new build used: quarantined by the old
    declaration, of a file the new build read, and not quarantined by the new one (files
    named where they landed: either build may have read one from retention's archive)."""
    from pyspark.sql import functions as F

    def lines(locations: Locations):
        if not fs.exists(locations.quarantine):
            return None
        found = spark.read.schema("source_file string, line_number long").json(locations.quarantine)
        archived = locations.archive.rstrip("/") + "/"
        landed = F.concat(
            F.lit(locations.landing.rstrip("/") + "/"), F.col("source_file").substr(len(archived) + 1, 1 << 20)
        )
        file = F.when(F.col("source_file").startswith(archived), landed).otherwise(F.col("source_file"))
        return found.select(file.alias("source_file"), "line_number").distinct()

    old, new = lines(in_use), lines(build)
    if old is None:
        return 0
    used = old if new is None else old.join(new, ["source_file", "line_number"], "left_anti")
    read = spark.createDataFrame([(path,) for path in sorted(taken)], "source_file string")
    return used.join(read, "source_file", "left_semi").count()
