"""The data quality report: one static page across pipelines and runs, beside the Data Docs site.

    <reports>/index.html       the overview (one row per pipeline: health.py), then per
                               pipeline: rows per run (chart.py), quarantine reasons, the
                               history of each row rule and of each check, runs with verdicts, whole-table
                               checks, backfills and published versions
    <reports>/data_docs/       Great Expectations' Data Docs (suites and every validation result)

The page (templates/report.html.j2) is plain HTML with inline SVG: no script, nothing
fetched, so it opens the same from a laptop, a bucket or an air-gapped server.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

import jinja2

from jobs import declare
from jobs.backfill import PUBLISHED, REPLACED, BackfillError, current_version
from jobs.lake import fs
from jobs.lake.builds import current_build, in_use
from jobs.lake.layout import Locations, is_s3, join, normalize
from jobs.lake.pointer import Pointer
from jobs.quality_report import health
from jobs.quality_report.chart import FATES, run_chart, trend
from jobs.run.messages import brief
from jobs.run.report import RunReport, load_reports
from jobs.units import duration_words
from jobs.validate.result import ValidationResult, appended_since, load_results

HISTORY_COLUMNS = 12  # the latest validations in a check's history
FATE_COLORS = {
    "used": "#3b7dd8",
    "quarantined": "#e39b2d",
    "filtered": "#b58acf",
    "late": "#9a9a9a",
    "duplicates": "#5fb8ad",
}
VERDICT_COLORS = {"passed": "#2e9e5b", "warned": "#e3b12d", "failed": "#d64541", None: "#d0d0d0"}
# Run statuses and health share the verdicts' colours: good, needs a look, bad; anything else grey.
STATUS_COLORS = {**VERDICT_COLORS, "succeeded": "#2e9e5b", "refused": "#e3b12d", "stopped": "#888888"}
STATUS_COLORS |= {"healthy": "#2e9e5b", "warning": "#e3b12d", "failing": "#d64541", "late": "#8e5bd6"}
STATUS_COLORS |= {"not validated": "#d6803b"}

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("jobs.quality_report", "templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
)
_TEMPLATES.filters["duration"] = health.duration
_TEMPLATES.filters["duration_words"] = duration_words
_TEMPLATES.filters["brief"] = brief  # a long message folded: its first sentence and the commands that help

log = logging.getLogger(__name__)


def web_link(text: str | None) -> str | None:
    """A run's link (its Airflow task) when it is a web address: a run report written before
    requests were checked, or by hand, may hold `javascript:...`, which a page never links."""
    return text if text and urlparse(text).scheme in ("http", "https") else None


_TEMPLATES.filters["web_link"] = web_link


def link(uri: str) -> str | None:
    """A link a browser can follow to a location: local folders only."""
    return None if is_s3(uri) else f"file://{uri}"


def quarantine_reasons(runs: list[RunReport], quarantine: str) -> list[dict[str, Any]]:
    """Quarantined records by reason, most first, with the latest batch folder holding one: as
    the runs counted them when they set the records aside (the quarantine itself, raw lines of
    any size and any number of files, is never read here). Rows whose run did not count their
    reasons (before run reports had them) are one line, 'not recorded'."""
    rows: Counter[str] = Counter()
    latest: dict[str, int] = {}
    unrecorded = 0
    for run in runs:
        if run.quarantine_reasons is None:
            unrecorded += run.quarantined_rows
            continue
        for reason, counted in run.quarantine_reasons.items():
            rows[reason] += counted.rows
            latest[reason] = max(counted.last_batch, latest.get(reason, counted.last_batch))
    found = [
        {"reason": r, "rows": n, "records": join(quarantine, f"batch_id={latest[r]}")} for r, n in rows.most_common()
    ]
    if unrecorded:  # runs written before reasons were counted
        found.append({"reason": "(not recorded)", "rows": unrecorded, "records": quarantine})
    return found


def check_history(results: list[ValidationResult]) -> dict[str, Any]:
    """Each check's outcome in the latest validations (oldest left): True, False, or None
    (skipped, or not part of that validation)."""
    columns = results[-HISTORY_COLUMNS:]
    names = list(dict.fromkeys(c.name for result in columns for c in result.checks))
    outcomes = [{c.name: c for c in result.checks} for result in columns]
    rows = [{"name": name, "cells": [outcome.get(name) for outcome in outcomes]} for name in names]
    return {"columns": columns, "rows": rows}


def rule_history(pipeline: declare.PipelineBase, runs: list[RunReport]) -> dict[str, Any]:
    """Each rule's violations in the latest runs that read rows (oldest left): the rows that
    broke it and their share of the run's input rows; None where the run did not have the
    rule. The declared rules first, in their order, then those no longer declared."""
    columns = [run for run in runs if run.batch_ids and run.rules][-HISTORY_COLUMNS:]
    names = list(dict.fromkeys([rule.name for rule in pipeline.rules] + [n for run in columns for n in run.rules]))
    names = [name for name in names if any(name in run.rules for run in columns)]
    rows = []
    for name in names:
        action = next((run.rules[name].action for run in reversed(columns) if name in run.rules), None)
        cells = [
            {"violations": run.rules[name].violations, "share": run.rules[name].violations / (run.input_rows or 1)}
            if name in run.rules
            else None
            for run in columns
        ]
        rows.append({"name": name, "action": action, "cells": cells})
    return {"columns": columns, "rows": rows}


def stale_checks(runs: list[RunReport], results: list[ValidationResult]) -> dict[str, int]:
    """Whole-table check id -> runs that appended rows after it (the table it saw has grown)."""
    return {v.validation_id: len(appended_since(v, runs)) for v in results if v.scope == "table"}


def backfills(root: str, pipeline_name: str) -> list[dict[str, Any]]:
    """The pipeline's backfills, newest first: their runs and what each published, or
    replaced in the production table (and whether that was rolled back)."""
    folder = join(normalize(root), "backfills", pipeline_name)
    found = []
    for backfill_id in reversed(fs.list_names(folder)):
        work_root = join(folder, backfill_id)
        runs = load_reports(Locations.resolve(pipeline_name, root=work_root).runs)
        record = join(work_root, PUBLISHED)
        published = Pointer.from_dict(fs.read_json(record)).to_dict() if fs.exists(record) else None
        if published:
            try:
                published["current"] = current_version(published["publish_to"]) == published["path"]
            except BackfillError:  # its pointer is gone
                published["current"] = False
        replaced = fs.read_json_if_there(join(work_root, REPLACED))
        if replaced is not None and "version" not in replaced:
            replaced = None  # its commit not made yet (a replace step under way, or refused)
        found.append(
            {
                "id": backfill_id,
                "runs": runs,
                "published": published,
                "replaced": replaced,
                "work_root": work_root,
            }
        )
    return found


def _section(root: str, pipeline: declare.PipelineBase, locations: Locations, now: datetime) -> dict[str, Any]:
    runs, results = load_reports(locations.runs), load_results(locations.runs)
    # A run's verdict is the latest validation of its rows: its own, or a later run's that
    # validated them when its own did not finish.
    by_run = {run_id: v for v in results if v.scope == "run" for run_id in v.run_ids}
    return {
        "pipeline": pipeline,
        "health": health.assess(
            pipeline.name,
            pipeline.schedule,
            runs,
            results,
            now,
            pipeline.on_arrival.at_least_every_s,
            pipeline.freshness_s,
        ),
        "output": locations.output,
        "chart": run_chart(runs, by_run),
        "trend": trend(runs),
        # The latest run with input, if it has anomalies: named first, with the late tables.
        "anomalous": next((r for r in reversed(runs) if r.input_rows), None),
        "runs": [(run, by_run.get(run.run_id)) for run in reversed(runs)],
        # A column of filtered rows where a `where` filters, or once did: the table stays narrow.
        "filters": pipeline.filters or any(run.filtered_rows for run in runs),
        "reasons": quarantine_reasons(runs, locations.quarantine),
        "history": check_history(results),
        "rules": rule_history(pipeline, runs),
        "table_checks": [v for v in reversed(results) if v.scope == "table"],
        "stale": stale_checks(runs, results),
        "backfills": backfills(root, pipeline.name),
        "build": _as_dict(current_build(root, pipeline.name)),  # the switch a rebuild made, if any
        "warned_pages": {v.data_docs_page for v in results if v.status == "warned" and v.data_docs_page},
    }


def sections(
    root: str, reports: str | None = None, now: datetime | None = None, declared: declare.Declarations | None = None
) -> list[dict[str, Any]]:
    """What the page shows of each pipeline that loads, worst first, from what is stored under `root`."""
    now = now or datetime.now(UTC)
    declared = declared or declare.load_each()
    found = [
        _section(root, pipeline, in_use(name, root, reports=reports), now)
        for name, pipeline in declared.pipelines.items()
    ]
    return sorted(found, key=lambda s: (s["health"].rank, s["pipeline"].name))


def table_graph(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tables that read or are read by another (`source: {table: ...}`), each upstream
    before its readers: what it reads, what reads it, and its section (health, last verdict)."""
    by_name = {s["pipeline"].name: s for s in found}
    reads = {name: s["pipeline"].source.table for name, s in by_name.items()}
    linked = [name for name in by_name if reads[name] in by_name or name in reads.values()]
    depth = {}
    for name in linked:  # declarations are refused on a cycle (jobs/declare/graph.py): this ends
        chain, above = 0, reads[name]
        while above in by_name:
            chain, above = chain + 1, reads[above]
        depth[name] = chain
    return [
        {
            "name": name,
            "reads": reads[name],
            "read_by": [r for r in linked if reads[r] == name],
            "section": by_name[name],
        }
        for name in sorted(linked, key=lambda n: (depth[n], n))
    ]


def render(root: str, reports: str | None = None, found: list[dict[str, Any]] | None = None) -> str:
    """The summary page's HTML, from the run reports and validation results under `root`
    (or the sections already read from them)."""
    now = datetime.now(UTC)
    declared = declare.load_each()  # a declaration that does not load is shown first, failing
    found = found if found is not None else sections(root, reports, now, declared)
    # A pipeline shows when it ran, or has backfills (what they published is news too).
    shown = [s for s in found if s["health"].status != "never run" or s["backfills"]]
    return _TEMPLATES.get_template("report.html.j2").render(
        graph=table_graph(found),
        broken=declared.broken,
        ran=shown,
        never_ran=[s["pipeline"] for s in found if s not in shown],
        generated=now.isoformat(timespec="seconds"),
        root=normalize(root),
        fates=FATES,
        fate_colors=FATE_COLORS,
        verdict_colors=VERDICT_COLORS,
        status_colors=STATUS_COLORS,
        link=link,
    )


def build(root: str, reports: str | None = None, with_data_docs: bool = True) -> str:
    """Writes the summary page (and rebuilds the Data Docs site); returns the page's location."""
    locations = Locations.resolve("any", root=root, reports=reports)
    found = sections(root, reports)  # read once: for the Data Docs' vocabulary and for the page
    if with_data_docs and fs.exists(join(locations.quality, "gx")):
        from jobs.quality_report import data_docs

        warned = set().union(*(s["warned_pages"] for s in found))
        try:
            data_docs.build(locations, warned)
        except data_docs.AssetsMissing as error:
            log.warning("the Data Docs pages load their styles and scripts from CDNs: %s", error)
    page = join(locations.reports, "index.html")
    fs.write_text(page, render(root, reports, found))
    return page


def _as_dict(pointer: Pointer | None) -> dict | None:
    return pointer.to_dict() if pointer is not None else None
