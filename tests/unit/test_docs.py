"""The docs: README is a page (at most 250 lines) that points into the reference site, and
the site (MkDocs, docs/) builds strictly: a broken link, a page missing from the
navigation or a module missing from the module map fails here, in `make test`."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from jobs import declare
from jobs.declare.load import from_mapping
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
    assert "jobs/accounting/" in code and "batches.py" in code  # the module map, from the package docstrings
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
    assert from_mapping({**example, "description": shipped.description, "schedule": shipped.schedule}) == shipped


# A pointer into the docs, from code, messages and pages: `README, "Heading"` or
# `docs/page.md, "Heading"`. Anything else naming a section ("README, Groups") is a
# pointer that cannot be checked.
POINTER = re.compile(r'\b(README|docs/[\w-]+\.md), \\?"([^"\\]+)\\?"')
UNCHECKABLE = re.compile(r"\b(README|docs(?:/[\w-]+\.md)?), (?!\\?\")(?!re\.)")
SCANNED = ("jobs", "dags", "benchmarks", "demo", "infra", "docs", "expectations")


def _scanned_files() -> list:
    found = [REPO / "README.md"]
    for folder in SCANNED:
        found += [p for p in (REPO / folder).rglob("*") if p.suffix in (".py", ".md", ".yaml", ".j2", ".yml")]
    return found


def _headings(document: str) -> set[str]:
    text = (REPO / ("README.md" if document == "README" else document)).read_text()
    return {heading.replace("`", "").strip() for heading in re.findall(r"^#+ (.+)$", text, re.M)}


def test_every_pointer_into_the_docs_names_a_section_that_exists():
    pointers, loose = [], []
    for path in _scanned_files():
        text = path.read_text()
        where = path.relative_to(REPO)
        pointers += [(where, document, heading) for document, heading in POINTER.findall(text)]
        loose += [f"{where}: {m.group(0)}..." for m in UNCHECKABLE.finditer(text)]
    assert pointers, "no pointer found: the pattern no longer matches how they are written"
    dangling = [f"{where}: {doc}, {heading!r}" for where, doc, heading in pointers if heading not in _headings(doc)]
    assert dangling == []
    assert loose == [], 'write a pointer as README, "Heading" or docs/page.md, "Heading"'


NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
]
_COUNT = rf"(\d+|{'|'.join(NUMBERS)})"
# "eleven declared pipelines", "the 11 shipped pipelines", "all eleven pipelines" (not "ten pipelines" of a bench).
PIPELINE_COUNT = re.compile(
    rf"\b(?:(?:the|all) {_COUNT} (?:shipped |declared )?|{_COUNT} (?:shipped|declared) )pipelines\b", re.I
)


def test_the_docs_count_the_pipelines_that_are_declared():
    declared = len(declare.load_all())
    counts = []
    for path in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        counts += [(path.name, a or b) for a, b in PIPELINE_COUNT.findall(path.read_text())]
    assert counts, "no count of the pipelines found in the docs"
    wrong = [(page, said) for page, said in counts if said.lower() not in (str(declared), NUMBERS[declared])]
    assert wrong == [], f"{declared} pipelines are declared"
