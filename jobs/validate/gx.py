"""Great Expectations glue: one file-backed project for all pipelines, the suite's
expectations as GX objects, and a checkpoint run over a DataFrame."""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame

from jobs.lake.layout import local_path
from jobs.lake.locks import FolderLock
from jobs.units import named_before
from jobs.validate.result import CheckResult
from jobs.validate.suite import Expectation, Suite, gx_class_name

if TYPE_CHECKING:
    import pandas

# Great Expectations logs its own workings at INFO (200 lines per Data Docs build in a task
# log); its warnings and errors still show.
logging.getLogger("great_expectations").setLevel(logging.WARNING)

# Great Expectations can return every unexpected value on Spark; keep results small.
RESULT_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": 5}
GX_SEVERITY = {"fail": "critical", "warn": "warning"}
DATA_DOCS_SITE = "local_site"
_DESCRIBED = {
    "column_values_to_not_be_null": "are null",
    "compound_columns_to_be_unique": "share their key with another row",
    "column_values_to_be_unique": "share their value with another row",
}


def import_in_background() -> None:
    """Import Great Expectations (about 2.5 s of Python) in a thread while a run goes on: the
    run's validation then starts with it loaded. (At the lowest CPU priority it took longer:
    the run's own Python waits for the GIL the starved thread holds.)"""
    threading.Thread(
        target=importlib.import_module, args=("great_expectations",), name="import-gx", daemon=True
    ).start()


class ValidationError(RuntimeError):
    """There is nothing that can be validated as asked."""


def context(quality: str, site: Path):
    """The Great Expectations project in the local folder `quality`, its Data Docs site in `site`."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    project = gx.get_context(mode="file", project_root_dir=local_path(quality))
    views = "jobs.validate.data_docs_views"  # values a producer sent are text on every page
    page = {"view": {"module_name": views, "class_name": "EscapingPageView"}}
    wanted = {
        "class_name": "SiteBuilder",
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(site)},
        "site_index_builder": {
            "class_name": "DefaultSiteIndexBuilder",
            "view": {"module_name": views, "class_name": "EscapingIndexPageView"},
        },
        "site_section_builders": {"expectations": page, "validations": page, "profiling": page},
    }
    sites = project.get_config().get("data_docs_sites", {})
    if project.variables.progress_bars is None or sites.get(DATA_DOCS_SITE, {}) != wanted:
        project.variables.progress_bars = ProgressBarsConfig(globally=False)
        project.variables.save()
        if DATA_DOCS_SITE in sites:
            project.update_data_docs_site(DATA_DOCS_SITE, wanted)
        else:
            project.add_data_docs_site(DATA_DOCS_SITE, wanted)
    return project


def forget_before(quality: str, site: Path, suite_name: str, before: datetime, keep: str) -> list[str]:
    """Remove Great Expectations' stored results of `suite_name` and their Data Docs pages for
    the validations named by a time before `before`, but `keep` (the one just made): what
    retention's `runs` removes of the run reports, GX keeps apart (with its sample values).
    Returns the validations' run names it removed."""
    stored = local_path(quality) / "gx" / "uncommitted" / "validations" / suite_name
    pages = site / "validations" / suite_name
    removed = []
    with FolderLock(quality):
        for folder in sorted({*_listed(stored), *_listed(pages)}):
            if named_before(folder, before) and folder != keep:
                for parent in (stored, pages):
                    shutil.rmtree(parent / folder, ignore_errors=True)
                removed.append(folder)
    return removed


def _listed(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.is_dir()] if folder.is_dir() else []


def _gx_expectation(expectation: Expectation):
    import great_expectations as gx

    cls = getattr(gx.expectations, gx_class_name(expectation.expect), None)
    if cls is None:
        raise ValidationError(f"expect_{expectation.expect}: Great Expectations has no such expectation")
    kwargs = expectation.kwargs
    if expectation.expect.startswith("column_pair_") and "ignore_row_if" not in kwargs:
        # SQL's reading, the one Spark's engine has: a pair with a missing value is not compared.
        # Said for the pandas engine too, which would otherwise count it unexpected.
        kwargs["ignore_row_if"] = "either_value_is_missing"
    return cls(
        **kwargs,
        severity=GX_SEVERITY[expectation.severity],
        meta={"check": expectation.check_name, "severity": expectation.severity},
    )


def skipped(expectations: list[Expectation], why: str) -> list[CheckResult]:
    return [
        CheckResult(
            name=e.check_name, source="great_expectations", severity=e.severity, success=None, message=f"skipped: {why}"
        )
        for e in expectations
    ]


def _bounds(kwargs: dict[str, Any]) -> str:
    low, high = kwargs.get("min_value"), kwargs.get("max_value")
    if low is not None and high is not None:
        return f"between {low} and {high}"
    if low is not None:
        return f"at least {low}"
    if high is not None:
        return f"at most {high}"
    return str({k: v for k, v in kwargs.items() if k != "column"})


def _message(expectation: Expectation, result: dict[str, Any]) -> str:
    subject = ", ".join(expectation.columns) or "table"
    unexpected, total = result.get("unexpected_count"), result.get("element_count")
    if unexpected is None:
        return f"{subject}: observed {result.get('observed_value')}, expected {_bounds(expectation.kwargs)}"
    described = _DESCRIBED.get(expectation.expect, "are unexpected")
    if expectation.expect == "column_values_to_be_between":
        described = f"are not {_bounds(expectation.kwargs)}"
    examples = result.get("partial_unexpected_list") or []
    shown = f" (e.g. {examples[:3]})" if examples and expectation.expect != "column_values_to_not_be_null" else ""
    return f"{subject}: {unexpected} of {total} rows {described}{shown}"


def run_checkpoint(
    table: DataFrame | pandas.DataFrame,
    name: str,
    suite: Suite,
    quality: str,
    site: Path,
    run_name: str,
    rows_due: bool,
) -> tuple[list[CheckResult], str | None]:
    """Validates `table` with the suite; returns the results and the result's Data Docs page
    (relative to the site, which jobs/quality_report/data_docs.py builds)."""
    import great_expectations as gx

    active = [e for e in suite.expectations if e.when != "run_had_input" or rows_due]
    skips = skipped(
        [e for e in suite.expectations if e not in active],
        "the run used no rows its table shows yet (none read, or all duplicates, late or held in state)",
    )
    # The Data Docs site is rebuilt by `report` (a rebuild reads every stored result).
    result_format = RESULT_FORMAT if suite.samples else {**RESULT_FORMAT, "partial_unexpected_count": 0}
    # One Great Expectations project for all pipelines: one validation at a time writes to it.
    with FolderLock(quality):
        checkpoint = _checkpoint(context(quality, site), table, name, active, result_format)
        outcome = checkpoint.run(
            batch_parameters={"dataframe": table},
            run_id=gx.RunIdentifier(run_name=run_name, run_time=datetime.now(UTC)),
        )
    by_name = {e.check_name: e for e in active}
    checks, page = [], None
    for identifier, run_result in outcome.run_results.items():
        page = "validations/" + "/".join(identifier.to_tuple()) + ".html"
        for result in run_result.results:
            expectation = by_name[result.expectation_config.meta["check"]]
            checks.append(_check_result(expectation, result, result_format["partial_unexpected_count"]))
    order = [e.check_name for e in suite.expectations]
    return sorted([*checks, *skips], key=lambda c: order.index(c.name)), page


def _checkpoint(project, table: DataFrame | pandas.DataFrame, name: str, active: list, result_format: dict):
    """The table's checkpoint in the project: its data source (Spark's, or pandas' for a small
    output: jobs/validate/small_table.py), asset, suite and validation definition."""
    import great_expectations as gx

    if isinstance(table, DataFrame):
        source = project.data_sources.add_or_update_spark("tables")
    else:
        source = project.data_sources.add_or_update_pandas("small_tables")
    asset = next((a for a in source.assets if a.name == name), None) or source.add_dataframe_asset(name)
    batch = next((b for b in asset.batch_definitions if b.name == "output"), None)
    batch = batch or asset.add_batch_definition_whole_dataframe("output")
    gx_suite = project.suites.add_or_update(
        gx.ExpectationSuite(name=name, expectations=[_gx_expectation(e) for e in active])
    )
    definition = project.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=name, data=batch, suite=gx_suite)
    )
    return project.checkpoints.add_or_update(
        gx.Checkpoint(name=name, validation_definitions=[definition], actions=[], result_format=result_format)
    )


def _check_result(expectation, result, examples: int) -> CheckResult:
    """One expectation's result, as the product keeps it."""
    details = json.loads(json.dumps(result.result or {}, default=str))
    if details.get("element_count") == 0 and "unexpected_count" in details:
        details["unexpected_count"] = 0  # Spark's engine says None of no rows, pandas' 0
    return CheckResult(
        name=expectation.check_name,
        source="great_expectations",
        severity=expectation.severity,
        success=bool(result.success),
        message=_message(expectation, details),
        unexpected_count=details.get("unexpected_count"),
        element_count=details.get("element_count"),
        observed=details.get("observed_value"),
        examples=(details.get("partial_unexpected_list") or [])[:examples],
    )
