"""`make demo` as a newcomer runs it (`python -m demo`, both default pipelines, a fresh
root), then again: what README promises of it, and the figures docs/pipelines.md quotes
from it are the ones it prints."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.helpers import REPO


def _demo(root) -> str:
    ran = subprocess.run(
        [sys.executable, "-m", "demo", "--root", str(root)], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran.stdout


def _words(line: str) -> str:
    return " ".join(line.split())


def _quoted_in_the_docs() -> list[str]:
    """The lines of docs/pipelines.md's `make demo` example, but its elision."""
    text = (REPO / "docs" / "pipelines.md").read_text()
    block = re.search(r"Example: `make demo`.*?```\n(.*?)```", text, re.S).group(1)
    return [_words(line) for line in block.splitlines() if line.strip() not in ("", "...")]


def test_the_demo_prints_what_the_docs_quote_and_again_lands_nothing_new(tmp_path):
    first = _demo(tmp_path / "data")
    printed = {_words(line) for line in first.splitlines()}
    assert [line for line in _quoted_in_the_docs() if line not in printed] == []
    assert "validation (Great Expectations" in first and "read outside Spark (delta-rs)" in first
    table = [line for line in first.splitlines() if line.startswith("  20")]  # the tables' rows

    again = _demo(tmp_path / "data")
    assert again.count("nothing new (landed by an earlier demo run)") == first.count("=== arrival")
    assert [line for line in again.splitlines() if line.startswith("  20")] == table
