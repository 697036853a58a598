"""Publishing what happened: the data quality report page (a jinja2 template) and the Data Docs site.

report.py      <reports>/index.html: every pipeline, its runs, rows and verdicts
health.py      the report's overview: what needs a look first (failures, stale checks, warnings)
chart.py       each pipeline's runs as a chart of what became of their rows
data_docs.py   <reports>/data_docs/: Great Expectations' site, made to work offline
"""
