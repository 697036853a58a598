"""The data quality report: a page across every pipeline's runs and checks (a jinja2
template), beside Great Expectations' Data Docs site.

page.py        <reports>/index.html: every pipeline, its runs, rows and verdicts
health.py      the page's overview: what needs a look first (failures, stale checks, warnings)
chart.py       each pipeline's runs as a chart of what became of their rows
data_docs.py   <reports>/data_docs/: Great Expectations' site, made to work offline
"""
