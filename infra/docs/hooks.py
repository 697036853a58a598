"""MkDocs hooks: pages that show what the code says about itself, never a copy of it.

`<!-- module-map -->` in a page becomes every package's docstring (the one module map:
tests/unit/test_layout.py checks that each module is named in it), and
`<!-- test-modules -->` becomes each test module's docstring, by folder.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def module_map() -> str:
    sections = []
    for init in sorted((REPO / "jobs").rglob("__init__.py")):
        folder = init.parent.relative_to(REPO)
        sections.append(f"### `{folder}/`\n\n```text\n{_docstring(init)}\n```\n")
    return "\n".join(sections)


def test_modules() -> str:
    sections = []
    for folder in sorted(p for p in (REPO / "tests").iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        lines = [f"### `tests/{folder.name}/`\n"]
        for module in sorted(folder.glob("test_*.py")):
            first = " ".join(_docstring(module).split("\n\n")[0].split()) or "(no docstring)"
            lines.append(f"- `{module.name}`: {first}")
        sections.append("\n".join(lines) + "\n")
    return "\n".join(sections)


def on_page_markdown(markdown: str, **_: object) -> str:
    if "<!-- module-map -->" in markdown:
        markdown = markdown.replace("<!-- module-map -->", module_map())
    if "<!-- test-modules -->" in markdown:
        markdown = markdown.replace("<!-- test-modules -->", test_modules())
    return markdown
