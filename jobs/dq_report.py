"""The data quality report: one static page across pipelines and runs, beside the Data Docs site.

    <reports>/index.html       every pipeline: rows per run (a chart), run history with verdicts
    <reports>/data_docs/       Great Expectations' Data Docs (suites and every validation result)

The page is plain HTML with an inline SVG chart: no script, nothing fetched, so it opens
the same from a laptop, a bucket or an air-gapped server.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from html import escape
from typing import Any

from jobs import spec as specs
from jobs import storage
from jobs.report import load_reports, load_validations
from jobs.storage import Locations, join

CHART_RUNS = 40  # the chart shows the latest runs only; the table shows them all
COLORS = {"aggregated": "#3b7dd8", "quarantined": "#e39b2d", "late": "#9a9a9a"}
VERDICT_COLORS = {"passed": "#2e9e5b", "warned": "#e3b12d", "failed": "#d64541", None: "#d0d0d0"}
# Run statuses share the verdicts' colours: good, needs a look, bad; anything else grey.
STATUS_COLORS = {**VERDICT_COLORS, "succeeded": "#2e9e5b", "refused": "#e3b12d", "stopped": "#888888"}

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
.muted { color: #666; } table { border-collapse: collapse; width: 100%; margin-top: .8rem; }
th, td { padding: .3rem .5rem; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th:first-child, td:first-child, td.text, th.text { text-align: left; } td.checks { white-space: normal; text-align: left; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: .6rem; color: #fff; font-size: .8rem; }
.tiles { display: flex; gap: 1rem; flex-wrap: wrap; margin: .8rem 0; }
.tile { border: 1px solid #e3e3e3; border-radius: .4rem; padding: .4rem .8rem; min-width: 8rem; }
.tile b { display: block; font-size: 1.3rem; } .legend span { margin-right: 1rem; }
.legend i { display: inline-block; width: .8rem; height: .8rem; margin-right: .3rem; vertical-align: -1px; }
"""


def _badge(status: str | None) -> str:
    color = STATUS_COLORS.get(status, STATUS_COLORS[None])
    return f'<span class="badge" style="background:{color}">{escape(status or "not validated")}</span>'


def _chart(runs: list[dict[str, Any]], verdicts: dict[str, dict[str, Any]]) -> str:
    """Stacked bars of input rows per run (aggregated, quarantined, late), a verdict dot under each."""
    runs = [r for r in runs if r["input_rows"]][-CHART_RUNS:]
    if not runs:
        return '<p class="muted">No run has read input rows yet.</p>'
    width, height, top, bottom = 720, 190, 12, 36
    slot = width / len(runs)
    bar = max(3.0, min(28.0, slot * 0.7))
    peak = max(r["input_rows"] for r in runs)
    scale = (height - top - bottom) / peak
    parts = [
        f'<svg role="img" aria-label="rows per run" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f'<line x1="0" y1="{height - bottom}" x2="{width}" y2="{height - bottom}" stroke="#bbb"/>',
        f'<text x="2" y="{top - 2}" font-size="10" fill="#666">{peak} rows</text>',
    ]
    for index, run in enumerate(runs):
        x = index * slot + (slot - bar) / 2
        y = height - bottom
        for fate, value in (
            ("aggregated", run["aggregated_rows"]),
            ("quarantined", run["quarantined_rows"]),
            ("late", run["late_rows_dropped"]),
        ):
            if not value:
                continue
            h = value * scale
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{COLORS[fate]}">'
                f"<title>{escape(run['run_id'])}: {value} {fate}</title></rect>"
            )
        status = verdicts.get(run["run_id"], {}).get("status")
        parts.append(
            f'<circle cx="{x + bar / 2:.1f}" cy="{height - bottom + 12}" r="4.5" fill="{VERDICT_COLORS.get(status)}">'
            f"<title>{escape(run['run_id'])}: validation {escape(status or 'not run')}</title></circle>"
        )
    parts.append(
        f'<text x="2" y="{height - 4}" font-size="10" fill="#666">'
        f"{escape(runs[0]['started_at'])} … {escape(runs[-1]['started_at'])}</text></svg>"
    )
    legend = "".join(f'<span><i style="background:{c}"></i>{f} rows</span>' for f, c in COLORS.items())
    dots = "".join(
        f'<span><i style="background:{VERDICT_COLORS[s]};border-radius:50%"></i>{s}</span>'
        for s in ("passed", "warned", "failed")
    )
    return "".join(parts) + f'<div class="legend muted">{legend}{dots}</div>'


def _failed_checks(validation: dict[str, Any] | None) -> str:
    if not validation:
        return ""
    failed = [c for c in validation["checks"] if c["success"] is False]
    return "<br>".join(f"{escape(c['severity'])}: {escape(c['message'])}" for c in failed)


def _verdict_cell(validation: dict[str, Any] | None) -> str:
    if not validation:
        return _badge(None)
    page = validation.get("data_docs_page")
    badge = _badge(validation["status"])
    return f'<a href="data_docs/{escape(page)}">{badge}</a>' if page else badge


def _pipeline_section(spec: specs.PipelineSpec, locations: Locations, validations: list[dict[str, Any]]) -> str:
    runs = load_reports(locations)
    by_run = {v["validation_id"]: v for v in validations if v["scope"] == "run"}
    table_checks = [v for v in validations if v["scope"] == "table"]
    totals = {
        key: sum(r[key] or 0 for r in runs)
        for key in ("input_rows", "aggregated_rows", "quarantined_rows", "late_rows_dropped", "output_rows")
    }
    failed_runs = sum(1 for r in runs if r["status"] == "failed")
    failed_checks = sum(1 for v in validations if v["status"] == "failed")
    tiles = [
        ("runs", len(runs)),
        ("failed runs", failed_runs),
        ("failed validations", failed_checks),
        ("input rows", totals["input_rows"]),
        ("rows written", totals["output_rows"]),
        ("quarantined", totals["quarantined_rows"]),
        ("late, dropped", totals["late_rows_dropped"]),
    ]
    head = (
        f'<h2>{escape(spec.name)}</h2><p class="muted">{escape(spec.description)} '
        f"Table: {escape(locations.output)}</p>"
        + '<div class="tiles">'
        + "".join(f'<div class="tile"><b>{value}</b>{escape(label)}</div>' for label, value in tiles)
        + "</div>"
    )
    rows = []
    for run in reversed(runs):
        validation = by_run.get(run["run_id"])
        rows.append(
            "<tr>"
            f'<td class="text">{escape(run["run_id"])}</td><td class="text">{escape(run["trigger"])}</td>'
            f"<td>{_badge(run['status'])}</td><td>{run['duration_s']}</td><td>{run['input_files']}</td>"
            f"<td>{run['input_rows']}</td><td>{run['aggregated_rows']}</td><td>{run['quarantined_rows']}</td>"
            f"<td>{run['late_rows_dropped']}</td><td>{'?' if run['output_rows'] is None else run['output_rows']}</td>"
            f"<td>{_verdict_cell(validation)}</td>"
            f'<td class="checks">{escape(run["error"] or "")}{_failed_checks(validation)}</td>'
            "</tr>"
        )
    runs_table = (
        "<table><thead><tr><th>run</th><th class='text'>trigger</th><th>status</th><th>seconds</th><th>files</th>"
        "<th>input rows</th><th>aggregated</th><th>quarantined</th><th>late</th><th>rows written</th>"
        "<th>validation</th><th class='text'>problems</th></tr></thead><tbody>"
        + ("".join(rows) or '<tr><td class="text muted" colspan="12">no runs yet</td></tr>')
        + "</tbody></table>"
    )
    whole = ""
    if table_checks:
        items = "".join(
            f"<li>{escape(v['validated_at'])}: {_verdict_cell(v)} {v['rows_validated']} rows. {_failed_checks(v)}</li>"
            for v in reversed(table_checks)
        )
        whole = f"<h3>Whole-table validations</h3><ul>{items}</ul>"
    return f'<section id="{escape(spec.name)}">' + head + _chart(runs, by_run) + runs_table + whole + "</section>"


def render(root: str, reports: str | None = None) -> str:
    """The summary page's HTML, from the run reports and validation results under `root`."""
    sections = []
    names = []
    for name, spec in specs.load_all().items():
        locations = Locations.resolve(name, root=root, reports=reports)
        sections.append(_pipeline_section(spec, locations, load_validations(locations)))
        names.append(name)
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    nav = " · ".join(f'<a href="#{escape(n)}">{escape(n)}</a>' for n in names)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Data quality report</title><style>{STYLE}</style></head><body>"
        f'<h1>Data quality report</h1><p class="muted">Generated {generated} from {escape(storage.normalize(root))}. '
        f'Pipelines: {nav}. Expectation suites and every validation result: <a href="data_docs/index.html">Data Docs</a>.'
        "</p>" + "".join(sections) + "</body></html>"
    )


def build(
    root: str, reports: str | None = None, with_data_docs: bool = True, echo: Callable[[str], None] = print
) -> str:
    """Writes the summary page (and rebuilds the Data Docs site); returns the page's location."""
    locations = Locations.resolve("any", root=root, reports=reports)
    if with_data_docs and storage.exists(join(locations.quality, "gx")):
        from jobs.data_docs import AssetsMissing
        from jobs.quality import build_data_docs

        try:
            build_data_docs(locations)
        except AssetsMissing as error:
            echo(f"warning: the Data Docs pages load their styles and scripts from CDNs: {error}")
    page = join(locations.reports, "index.html")
    storage.write_text(page, render(root, reports))
    return page
