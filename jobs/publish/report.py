"""The data quality report: one static page across pipelines and runs, beside the Data Docs site.

    <reports>/index.html       every pipeline: rows per run (a chart), run history with verdicts
    <reports>/data_docs/       Great Expectations' Data Docs (suites and every validation result)

The page (templates/report.html.j2) is plain HTML with an inline SVG chart: no script,
nothing fetched, so it opens the same from a laptop, a bucket or an air-gapped server.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import jinja2

from jobs import declare
from jobs.lake import fs
from jobs.lake.layout import Locations, join, normalize
from jobs.run.report import RunReport, load_reports
from jobs.validate.result import ValidationResult, load_results

CHART_RUNS = 40  # the chart shows the latest runs only; the table shows them all
FATE_COLORS = {"used": "#3b7dd8", "quarantined": "#e39b2d", "late": "#9a9a9a"}
VERDICT_COLORS = {"passed": "#2e9e5b", "warned": "#e3b12d", "failed": "#d64541", None: "#d0d0d0"}
# Run statuses share the verdicts' colours: good, needs a look, bad; anything else grey.
STATUS_COLORS = {**VERDICT_COLORS, "succeeded": "#2e9e5b", "refused": "#e3b12d", "stopped": "#888888"}
CHART = {"width": 720, "height": 190, "top": 12, "bottom": 36}

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("jobs.publish", "templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
)


def _chart(runs: list[RunReport], verdicts: dict[str, ValidationResult]) -> dict[str, Any] | None:
    """Stacked bars of input rows per run (used, quarantined, late), a verdict dot under each."""
    runs = [r for r in runs if r.input_rows][-CHART_RUNS:]
    if not runs:
        return None
    width, height, top, bottom = CHART["width"], CHART["height"], CHART["top"], CHART["bottom"]
    slot = width / len(runs)
    bar = max(3.0, min(28.0, slot * 0.7))
    peak = max(r.input_rows for r in runs)
    scale = (height - top - bottom) / peak
    bars = []
    for index, run in enumerate(runs):
        x, y, segments = index * slot + (slot - bar) / 2, height - bottom, []
        for fate, value in (
            ("used", run.used_rows),
            ("quarantined", run.quarantined_rows),
            ("late", run.late_rows_dropped),
        ):
            if value:
                y -= value * scale
                segments.append({"y": y, "h": value * scale, "fate": fate, "value": value})
        verdict = verdicts.get(run.run_id)
        bars.append({"run": run, "x": x, "segments": segments, "verdict": verdict.status if verdict else None})
    return {**CHART, "bar": bar, "peak": peak, "bars": bars, "first": runs[0].started_at, "last": runs[-1].started_at}


def _section(pipeline: declare.PipelineBase, locations: Locations) -> dict[str, Any]:
    runs = load_reports(locations.runs)
    results = load_results(locations.runs)
    by_run = {v.validation_id: v for v in results if v.scope == "run"}
    tiles = [
        ("runs", len(runs)),
        ("failed runs", sum(1 for r in runs if r.status == "failed")),
        ("failed validations", sum(1 for v in results if v.status == "failed")),
        ("input rows", sum(r.input_rows for r in runs)),
        ("rows written", sum(r.output_rows or 0 for r in runs)),
        ("quarantined", sum(r.quarantined_rows for r in runs)),
        ("late, dropped", sum(r.late_rows_dropped for r in runs)),
    ]
    return {
        "pipeline": pipeline,
        "output": locations.output,
        "tiles": tiles,
        "chart": _chart(runs, by_run),
        "runs": [(run, by_run.get(run.run_id)) for run in reversed(runs)],
        "table_checks": [v for v in reversed(results) if v.scope == "table"],
    }


def render(root: str, reports: str | None = None) -> str:
    """The summary page's HTML, from the run reports and validation results under `root`."""
    sections = [
        _section(pipeline, Locations.resolve(name, root=root, reports=reports))
        for name, pipeline in declare.load_all().items()
    ]
    return _TEMPLATES.get_template("report.html.j2").render(
        sections=sections,
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        root=normalize(root),
        fate_colors=FATE_COLORS,
        verdict_colors=VERDICT_COLORS,
        status_colors=STATUS_COLORS,
    )


def build(
    root: str, reports: str | None = None, with_data_docs: bool = True, echo: Callable[[str], None] = print
) -> str:
    """Writes the summary page (and rebuilds the Data Docs site); returns the page's location."""
    locations = Locations.resolve("any", root=root, reports=reports)
    if with_data_docs and fs.exists(join(locations.quality, "gx")):
        from jobs.publish import data_docs

        try:
            data_docs.build(locations)
        except data_docs.AssetsMissing as error:
            echo(f"warning: the Data Docs pages load their styles and scripts from CDNs: {error}")
    page = join(locations.reports, "index.html")
    fs.write_text(page, render(root, reports))
    return page
