"""Great Expectations' Data Docs views, with every value a producer sent escaped.

GX 1.x renders its pages with Jinja templates named `*.j2` and picks autoescape by file suffix
(html, xml), so nothing is escaped by the templates; GX escapes the parameters of its string
templates itself, but a plain string cell (an unexpected value kept as a sample, in the
validation page's table) is written as it is, and a chart's data is written into a <script>.
A row value such as `<img src=x onerror=...>` would run in the browser of whoever opens the
Data Docs, on the same origin as the report. These views (named in the site's configuration,
jobs/validate/gx.py) make such a string text: the renderers' own markup is never a plain
string, so nothing GX means as markup is escaped twice.
"""

from __future__ import annotations

import html
from typing import Any

from great_expectations.render.view import DefaultJinjaIndexPageView, DefaultJinjaPageView

try:  # what GX itself uses (view.py): Jinja 3's name, or Jinja 2's
    from jinja2 import pass_context
except ImportError:  # pragma: no cover
    from jinja2 import contextfilter as pass_context

# In a <script>, JSON may carry any character but these three as themselves.
_IN_SCRIPT = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


class _Escaping:
    @pass_context
    def render_content_block(self, jinja_context: Any, content_block: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(content_block, str):
            return html.escape(content_block)
        if isinstance(content_block, list):
            content_block = [html.escape(el) if isinstance(el, str) else el for el in content_block]
        elif isinstance(content_block, dict) and isinstance(content_block.get("graph"), str):
            content_block = {**content_block, "graph": content_block["graph"].translate(_IN_SCRIPT)}
        return super().render_content_block(jinja_context, content_block, *args, **kwargs)


class EscapingPageView(_Escaping, DefaultJinjaPageView):
    """The validation, expectation suite and profiling pages."""


class EscapingIndexPageView(_Escaping, DefaultJinjaIndexPageView):
    """The site's index page."""
