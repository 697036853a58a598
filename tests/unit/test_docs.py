"""The docs: README is a page (at most 250 lines) that points into the reference site, and
the site (MkDocs, docs/) builds strictly: a broken link, a page missing from the
navigation or a module missing from the module map fails here, in `make test`."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from jobs import declare
from jobs.declare.load import parse
from tests.helpers import REPO

README = (REPO / "README.md").read_text()


def test_the_site_builds_strictly(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    code = (tmp_path / "site" / "code" / "index.html").read_text()
    assert "jobs/run/" in code and "bookkeeper.py" in code  # the module map, from the package docstrings
    tests = (tmp_path / "site" / "tests" / "index.html").read_text()
    assert "test_docs.py" in tests  # each test module's own docstring, not a copy


def test_the_readme_is_a_page_that_points_into_the_site():
    assert len(README.splitlines()) <= 250
    named = set(re.findall(r"`(docs/[\w-]+\.md)`", README))
    assert named and all((REPO / page).is_file() for page in named), named
    assert {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")} - {"docs/index.md"} <= named
    for command in ("make demo", "make test", "make docs"):
        assert command in README


def test_the_readme_s_example_declaration_is_the_shipped_one():
    example = yaml.safe_load(re.search(r"```yaml\n(.*?)```", README, re.S).group(1))
    shipped = declare.load(example["name"])
    assert parse({**example, "description": shipped.description, "schedule": shipped.schedule}) == shipped
