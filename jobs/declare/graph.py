"""Pipelines that read pipelines: a source `table: <pipeline>` reads that pipeline's table.

When a declaration loads, the table it reads must be one a declared pipeline writes (its
format, Parquet or Delta, is the one that pipeline declares), and not through a cycle; a
source that declares no event time takes the upstream table's own (`time_of_table`: a
window table's `window_end`, an events or join table's time field).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jobs.columns import reserved
from jobs.declare.problems import did_you_mean
from jobs.units import ON_ARRIVAL, ON_UPSTREAM, column_name

# What a source reading another pipeline's table may not say: the table says it.
TABLE_SAYS = ("format", "schema", "hints", "types", "on_type_mismatch", "shared")

# What loads one declaration by name, being given the names of those that read it (a chain).
Loader = Callable[[str, tuple[str, ...]], Any]


class GraphError(ValueError):
    """A table source that cannot be: no pipeline writes it, a cycle, or a format not read."""


class CycleError(GraphError):
    """Source tables that read each other: said once, whichever of them is loading."""


def source_table(raw: Any) -> str | None:
    """The pipeline whose table a declaration (as written) reads, if it reads one."""
    source = raw.get("source") if isinstance(raw, dict) else None
    table = source.get("table") if isinstance(source, dict) else None
    return table if isinstance(table, str) else None


def time_of_table(upstream: Any) -> dict[str, str] | None:
    """The event time a pipeline reading `upstream`'s table takes unless it declares one: a
    window's `window_end` (its rows are final once it ends); an events or a join table's
    time field as the table holds it (an events table's `event_time` column is the product's
    own name, which a reader reads as `event_time_1`); None for a processor's rows, whose
    times are what it gives them."""
    if upstream.pattern == "window":
        return {"column": "window_end"}
    if upstream.pattern == "process":
        return None
    time = upstream.source.event_time
    column = column_name(time.column) if upstream.pattern == "join" else time.column
    return {"column": column, "format": time.format}


def table_says(raw: Any) -> Any:
    """A table source as written, with what the table says: its rows reach the decoder as
    JSON objects (jobs/flow/source.py), and its schema is the table's, recorded by its first
    run as an inferred one is. Refused: a source that says either itself."""
    if not isinstance(raw, dict) or raw.get("table") is None:
        return raw
    said = [key for key in TABLE_SAYS if key in raw]
    if said:
        raise ValueError(
            f"a source reading table {raw['table']!r} takes its format and schema from the table; "
            f"leave out {', '.join(said)}"
        )
    return {**raw, "format": "json", "schema": "infer"}


def with_upstream(raw: dict, chain: tuple[str, ...], declared: list[str], load: Loader) -> dict:
    """`raw` with its source's event time taken from the table it reads, when it names none;
    GraphError if that table cannot be read. `chain`: the pipelines that read this one, in
    the order they were loaded (a cycle comes back to one of them)."""
    table, name = source_table(raw), raw.get("name")
    if table is None:
        return raw
    if table == name or table in chain:
        cycle = [*chain[chain.index(table) :], name, table] if table in chain else [name, table]
        raise CycleError(f"source tables make a cycle: {' reads '.join(map(str, cycle))}")
    if table not in declared:
        raise GraphError(
            f"source table {table!r}: no declared pipeline writes it{did_you_mean(table, declared)}"
            f" (declared: {', '.join(declared) or 'none'})"
        )
    if raw.get("join") is not None:
        raise GraphError(f"source table {table!r}: a join reads two landings, not a table")
    try:
        upstream = load(table, (*chain, str(name)))
    except CycleError:
        raise
    except ValueError as error:  # its own problems (its own table's too), said when it loads on its own
        raise GraphError(f"source table {table!r}: its declaration does not load ({error})") from None
    if upstream.retention.output_after_s is not None:
        raise GraphError(
            f"source table {table!r} drops its output files after a while (its retention.output_after): "
            "a reader could lose rows it has not read yet; leave that out of its declaration"
        )
    if "table_format" in raw["source"]:
        raise GraphError(f"source table {table!r}: its format is what its pipeline declares; leave out table_format")
    source = {**raw["source"], "table_format": upstream.output.format}
    given = source.get("event_time")
    column = given.get("column") if isinstance(given, dict) else None
    if isinstance(column, str) and reserved(column.split(".")[0]):
        default = (time_of_table(upstream) or {}).get("column")
        instead = f"; or leave event_time out: the table's own is {default!r}" if default else ""
        raise GraphError(
            f"source table {table!r}: event_time column {column!r} is the product's own name; "
            f"the table's column of that name is read as '{column.split('.')[0]}_1'{instead}"
        )
    if given is None:
        time = time_of_table(upstream)
        if time is None:
            raise GraphError(
                f"source table {table!r}: a {upstream.pattern} table has no time of its own; "
                "declare source.event_time (the column of its rows that is their event time)"
            )
        source = {**source, "event_time": time}
    return {**raw, "source": source}


def reader_problems(table: str | None, schedule: str | None, landed_retention: str) -> list[str]:
    """What the other parts of a pipeline whose source reads `table` (None: a landing) may not say."""
    if table is None:
        landing = f"schedule {ON_UPSTREAM} runs a reader of another pipeline's table; this source is a landing"
        return [landing] if schedule == ON_UPSTREAM else []
    problems = []
    if landed_retention != "keep":
        problems.append(f"retention.landed removes landed files; this source reads table {table!r}")
    if schedule == ON_ARRIVAL:
        problems.append(
            f"schedule {ON_ARRIVAL} watches a landing; this source reads table {table!r} (see {ON_UPSTREAM})"
        )
    return problems
