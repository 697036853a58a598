"""A declared field's column, by its path through objects ('repo.name'), for parsing, rules,
patterns and enrichment alike."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def field(path: str) -> Column:
    """The column of a field, or of a path to one inside objects ('repo.name'); each name
    quoted, so that any name a schema may declare works."""
    return F.col(".".join(f"`{name}`" for name in path.split(".")))
