"""Publishing what happened: the data quality report page (a jinja2 template) and the Data Docs site.

report.py      <reports>/index.html: every pipeline, its runs, rows and verdicts
data_docs.py   <reports>/data_docs/: Great Expectations' site, made to work offline
"""
