"""Every worked example of docs/expressions.md runs as the page says: its declaration loads,
its landed lines are read by one run, and the table holds exactly the rows the page shows
(the columns shown). A page that drifts from the product fails here."""

from __future__ import annotations

import json
import re
from datetime import datetime
from decimal import Decimal

import pytest
import yaml

from jobs import declare
from jobs.lake.layout import Locations
from tests.helpers import REPO, land_in_order, run_pipeline

PAGE = (REPO / "docs" / "expressions.md").read_text()
WORKED = PAGE.split("## Worked examples", 1)[1].split("\n## ", 1)[0]


def _examples() -> list[tuple[str, dict, list[str], list[dict]]]:
    """(title, declaration, landed lines, written rows) of each worked example."""
    found = []
    for section in WORKED.split("\n### ")[1:]:
        title = section.splitlines()[0]
        (declared,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
        landed, written = re.findall(r"```json\n(.*?)```", section, re.S)
        found.append(
            (title, yaml.safe_load(declared), landed.splitlines(), [json.loads(r) for r in written.splitlines()])
        )
    return found


EXAMPLES = _examples()


def test_the_page_has_its_worked_examples():
    assert len(EXAMPLES) >= 4 and any("Declarative Pipelines" in t for t, *_ in EXAMPLES)


@pytest.mark.parametrize(("title", "raw", "landed", "written"), EXAMPLES, ids=[t for t, *_ in EXAMPLES])
def test_a_worked_example_writes_what_the_page_shows(spark, tmp_path, title, raw, landed, written):
    pipeline = declare.from_mapping(raw)
    locations = Locations.resolve(pipeline.name, root=str(tmp_path))
    land_in_order(locations.landing, {"landed.json": landed})
    report = run_pipeline(spark, pipeline, locations)
    assert report.rows_balance and report.input_rows == len(landed)

    columns = list(written[0])
    table = spark.read.parquet(locations.output).select(*columns).collect()
    shown = sorted(json.dumps(row, sort_keys=True) for row in written)
    assert sorted(json.dumps(_as_shown(row.asDict()), sort_keys=True) for row in table) == shown


def _as_shown(row: dict) -> dict:
    """Times as the page writes them; a whole-number sum (a decimal(38,0)) as a number."""
    shown = {k: v.strftime("%Y-%m-%d %H:%M:%S") if isinstance(v, datetime) else v for k, v in row.items()}
    return {k: int(v) if isinstance(v, Decimal) else v for k, v in shown.items()}
