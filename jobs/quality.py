"""Great Expectations glue: check what a run wrote, or the whole table, against its suite.

    run report -> the files its batches committed (Spark's sink log) -> DataFrame
    -> Great Expectations (suite from expectations/<table>.yaml) + checks on the run report
    -> verdict -> results JSON beside the run report, and the Data Docs site

Only committed files are read: a file the sink wrote but never committed (a crashed
batch) is not in the sink log, so it is never validated and never reaches readers.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from jobs import data_docs, storage
from jobs.checkpoint import CheckpointLog
from jobs.dimensions import dimension_uri, read_dimension
from jobs.inference import with_recorded_schema
from jobs.report import RESULTS_SUFFIX, load_reports
from jobs.spec import PipelineSpec
from jobs.storage import Locations, join
from jobs.suite import Expectation, RunCheck, Suite, load_suite
from jobs.transforms import LINE, SOURCE_FILE, pipeline_table

# Great Expectations can return every unexpected value on Spark; keep results small.
RESULT_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": 5}
GX_SEVERITY = {"fail": "critical", "warn": "warning"}
DATA_DOCS_SITE = "local_site"


class ValidationError(RuntimeError):
    """There is nothing that can be validated as asked."""


@dataclass
class CheckResult:
    name: str
    source: str  # great_expectations or run_report
    severity: str  # fail or warn
    success: bool | None  # None: skipped, its condition did not hold
    message: str
    unexpected_count: int | None = None
    element_count: int | None = None
    observed: Any = None
    examples: list[Any] = field(default_factory=list)


@dataclass
class Validation:
    pipeline: str
    scope: str  # run: the files one run committed; table: the whole table
    validation_id: str
    run_ids: list[str]
    validated_at: str
    status: str = "passed"  # passed, warned (a warn check failed) or failed (a fail check failed)
    duration_s: float = 0.0
    files_validated: int = 0
    rows_validated: int = 0
    checks: list[CheckResult] = field(default_factory=list)
    data_docs_page: str | None = None  # relative to <reports>/data_docs

    def decide(self) -> None:
        failed = [c for c in self.checks if c.success is False]
        if any(c.severity == "fail" for c in failed):
            self.status = "failed"
        elif failed:
            self.status = "warned"
        else:
            self.status = "passed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        what = f"run {self.run_ids[0]}" if self.scope == "run" else f"the whole table ({len(self.run_ids)} runs)"
        passed = sum(1 for c in self.checks if c.success)
        ran = sum(1 for c in self.checks if c.success is not None)
        if all(c.success is None for c in self.checks if c.source == "great_expectations"):
            scope = "no batch ran: only the run report was checked"
        else:
            scope = f"{self.rows_validated} rows in {self.files_validated} files"
        lines = [
            f"{self.pipeline} validation of {what}: {self.status.upper()} "
            f"({passed}/{ran} checks passed, {scope}, {self.duration_s}s)"
        ]
        for check in self.checks:
            if check.success is False:
                lines.append(f"  {check.severity.upper()} {check.name}: {check.message}")
        return "\n".join(lines)


# Reading what to validate.
def output_schema(spark: SparkSession, spec: PipelineSpec, locations: Locations | None = None) -> StructType:
    """The output table's schema, from the same transforms that write it (run on no rows).

    An enriching pipeline's dimension columns take their types from the dimension table
    when `locations` is given (strings otherwise, as CSV dimensions have)."""
    no_lines = spark.createDataFrame([], f"{LINE} string, {SOURCE_FILE} string")
    dimension = None
    if spec.enrich is not None:
        if locations is not None and storage.exists(dimension_uri(spec.enrich, locations)):
            dimension = read_dimension(spark, spec, locations).limit(0)
        else:
            columns = ", ".join(f"`{c}` string" for c in (spec.enrich.key, *spec.enrich.columns))
            dimension = spark.createDataFrame([], columns)
    return pipeline_table(no_lines, spec, dimension, joined_lines=no_lines).schema


def with_window_length(table: DataFrame) -> DataFrame:
    """Adds window_length_s = window_end - window_start, in seconds (windowed tables)."""
    if "window_end" not in table.columns:
        return table
    length = F.unix_timestamp("window_end") - F.unix_timestamp("window_start")
    return table.withColumn("window_length_s", length)


def read_committed(spark: SparkSession, spec: PipelineSpec, locations: Locations, files: list[str] | None) -> DataFrame:
    """Committed output: the given files of the table, or (files=None) the whole table.

    A streaming table is read through its sink log (Spark does so when `_spark_metadata`
    exists), so uncommitted files are left out in both cases. A table written by a batch
    job, such as a staged backfill, is whole once its `_SUCCESS` marker exists.
    """
    schema = output_schema(spark, spec, locations)
    if files is None and (
        storage.list_names(join(locations.output, "_spark_metadata"))
        or storage.exists(join(locations.output, "_SUCCESS"))
    ):
        table = spark.read.schema(schema).parquet(locations.output)
    elif files:
        table = spark.read.schema(schema).option("basePath", locations.output).parquet(*files)
    else:
        table = spark.createDataFrame([], schema)
    return table.transform(with_window_length)


def committed_files(log: CheckpointLog, batch_ids: list[int]) -> list[str]:
    files: list[str] = []
    for batch_id in batch_ids:
        batch_files = log.sink_files(batch_id)
        if batch_files is None:
            raise ValidationError(
                f"the sink log no longer lists the files of batch {batch_id} (compacted away); "
                "validate the whole table instead (--all)"
            )
        files.extend(batch_files)
    return files


# Checks on run reports.
def run_report_checks(suite: Suite, reports: list[dict[str, Any]]) -> list[CheckResult]:
    input_rows = sum(r["input_rows"] for r in reports)
    aggregated = sum(r["aggregated_rows"] for r in reports)
    quarantined = sum(r["quarantined_rows"] for r in reports)
    late = sum(r["late_rows_dropped"] for r in reports)
    # Older reports have no duplicates; an unknown count (None) is checked as zero.
    duplicates = sum(r.get("duplicates_dropped") or 0 for r in reports)
    results = []
    for check in suite.run_checks:
        results.append(_run_check(check, input_rows, aggregated, quarantined, late, duplicates))
    return results


def _run_check(
    check: RunCheck, input_rows: int, aggregated: int, quarantined: int, late: int, duplicates: int
) -> CheckResult:
    if check.name == "rows_balance":
        accounted = aggregated + quarantined + late + duplicates
        parts = f"aggregated {aggregated} + quarantined {quarantined} + late {late}"
        if duplicates:
            parts += f" + duplicates {duplicates}"
        return CheckResult(
            name="rows_balance (run report)",
            source="run_report",
            severity=check.severity,
            success=input_rows == accounted,
            message=(
                f"input rows {input_rows} = {parts}"
                if input_rows == accounted
                else f"input rows {input_rows} != {parts} = {accounted}: {abs(input_rows - accounted)} rows unaccounted for"
            ),
            observed={"input_rows": input_rows, "accounted_rows": accounted},
        )
    share = quarantined / input_rows if input_rows else 0.0
    return CheckResult(
        name="quarantine_share (run report)",
        source="run_report",
        severity=check.severity,
        success=share <= check.max_value,
        message=f"{quarantined} of {input_rows} input rows quarantined ({share:.1%}, at most {check.max_value:.1%})",
        unexpected_count=quarantined,
        element_count=input_rows,
        observed=round(share, 4),
    )


# Great Expectations.
def _gx_context(locations: Locations):
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="file", project_root_dir=storage.local_path(locations.quality))
    site = {
        "class_name": "SiteBuilder",
        "store_backend": {
            "class_name": "TupleFilesystemStoreBackend",
            "base_directory": str(_site_folder(locations)),
        },
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
    }
    if (
        context.variables.progress_bars is None
        or context.get_config().get("data_docs_sites", {}).get(DATA_DOCS_SITE, {}) != site
    ):
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        context.variables.save()
        if DATA_DOCS_SITE in context.get_config()["data_docs_sites"]:
            context.update_data_docs_site(DATA_DOCS_SITE, site)
        else:
            context.add_data_docs_site(DATA_DOCS_SITE, site)
    return context


def _gx_expectation(expectation: Expectation):
    import great_expectations as gx

    class_name = "Expect" + "".join(part.capitalize() for part in expectation.expect.split("_"))
    cls = getattr(gx.expectations, class_name, None)
    if cls is None:
        raise ValidationError(f"expect_{expectation.expect}: Great Expectations has no such expectation")
    return cls(
        **expectation.kwargs,
        severity=GX_SEVERITY[expectation.severity],
        meta={"check": expectation.check_name, "severity": expectation.severity},
    )


def _skipped(expectations: Iterable[Expectation], why: str) -> list[CheckResult]:
    return [CheckResult(e.check_name, "great_expectations", e.severity, None, f"skipped: {why}") for e in expectations]


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
    described = {
        "column_values_to_not_be_null": "are null",
        "column_values_to_be_between": f"are not {_bounds(expectation.kwargs)}",
        "compound_columns_to_be_unique": "share their key with another row",
        "column_values_to_be_unique": "share their value with another row",
    }.get(expectation.expect, "are unexpected")
    examples = result.get("partial_unexpected_list") or []
    shown = f" (e.g. {examples[:3]})" if examples and expectation.expect != "column_values_to_not_be_null" else ""
    return f"{subject}: {unexpected} of {total} rows {described}{shown}"


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def great_expectations_checks(
    table: DataFrame,
    spec: PipelineSpec,
    suite: Suite,
    locations: Locations,
    run_name: str,
    had_input: bool,
) -> tuple[list[CheckResult], str | None]:
    """Validates `table` with the suite; returns the results and the result's Data Docs page
    (relative to the site, which `build_data_docs` builds)."""
    import great_expectations as gx

    active = [e for e in suite.expectations if e.when != "run_had_input" or had_input]
    skipped = _skipped([e for e in suite.expectations if e not in active], "the run read no input rows")
    by_name = {e.check_name: e for e in active}
    # One Great Expectations project for all pipelines: one validation at a time writes to it.
    with storage.FolderLock(locations.quality):
        context = _gx_context(locations)
        source = context.data_sources.add_or_update_spark("tables")
        asset = next((a for a in source.assets if a.name == spec.name), None) or source.add_dataframe_asset(spec.name)
        batch = next((b for b in asset.batch_definitions if b.name == "output"), None)
        batch = batch or asset.add_batch_definition_whole_dataframe("output")
        gx_suite = gx.ExpectationSuite(name=spec.name, expectations=[_gx_expectation(e) for e in active])
        gx_suite = context.suites.add_or_update(gx_suite)
        definition = context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=spec.name, data=batch, suite=gx_suite)
        )
        checkpoint = context.checkpoints.add_or_update(
            gx.Checkpoint(
                name=spec.name,
                validation_definitions=[definition],
                # The Data Docs site is rebuilt by `report` (a rebuild reads every stored result).
                actions=[],
                result_format=RESULT_FORMAT,
            )
        )
        outcome = checkpoint.run(
            batch_parameters={"dataframe": table},
            run_id=gx.RunIdentifier(run_name=run_name, run_time=datetime.now(UTC)),
        )
    checks = []
    page = None
    for identifier, run_result in outcome.run_results.items():
        page = "validations/" + "/".join(identifier.to_tuple()) + ".html"
        for result in run_result.results:
            expectation = by_name[result.expectation_config.meta["check"]]
            details = _jsonable(result.result or {})
            checks.append(
                CheckResult(
                    name=expectation.check_name,
                    source="great_expectations",
                    severity=expectation.severity,
                    success=bool(result.success),
                    message=_message(expectation, details),
                    unexpected_count=details.get("unexpected_count"),
                    element_count=details.get("element_count"),
                    observed=details.get("observed_value"),
                    examples=(details.get("partial_unexpected_list") or [])[
                        : RESULT_FORMAT["partial_unexpected_count"]
                    ],
                )
            )
    order = [e.check_name for e in suite.expectations]
    checks = sorted([*checks, *skipped], key=lambda c: order.index(c.name))
    return checks, page


def _site_folder(locations: Locations) -> Path:
    """Where GX builds the Data Docs site: in the reports folder, or, when the reports go
    to a bucket, in a local staging folder that `build_data_docs` uploads."""
    if storage.is_s3(locations.reports):
        return storage.local_path(join(locations.quality, "data_docs_staging"))
    return storage.local_path(join(locations.reports, "data_docs"))


def build_data_docs(locations: Locations) -> str:
    """Rebuilds the Data Docs site from every stored result; returns its index page.

    Raises data_docs.AssetsMissing (after building) when the site still links CDNs.
    """
    site = join(locations.reports, "data_docs")
    with storage.FolderLock(locations.quality):
        _gx_context(locations).build_data_docs(site_names=[DATA_DOCS_SITE])
        try:
            data_docs.localize(_site_folder(locations))
        finally:
            if storage.is_s3(site):
                storage.upload_tree(_site_folder(locations), site)
    return join(site, "index.html")


# Validations.
def _validate(
    spark: SparkSession,
    spec: PipelineSpec,
    locations: Locations,
    suite: Suite,
    validation: Validation,
    reports: list[dict[str, Any]],
    files: list[str] | None,
    echo: Callable[[str], None],
) -> Validation:
    started = time.monotonic()
    spec = with_recorded_schema(spec, locations)
    if not any(r["batch_ids"] for r in reports):
        # No batch ran (no new files): nothing was written, and there is nothing to ask GX.
        validation.checks = _skipped(suite.expectations, "the run processed no batch") + run_report_checks(
            suite, reports
        )
        return _finish(validation, locations, started, echo)
    table = read_committed(spark, spec, locations, files)
    validation.files_validated = len(table.inputFiles())
    # Small tables: a handful of shuffle partitions, not Spark's 200, for the uniqueness checks.
    shuffle_partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(spec.state_partitions))
    table = table.cache()
    try:
        validation.rows_validated = table.count()
        had_input = sum(r["input_rows"] for r in reports) > 0
        checks, page = great_expectations_checks(table, spec, suite, locations, _gx_run_name(validation), had_input)
    finally:
        table.unpersist()
        spark.conf.set("spark.sql.shuffle.partitions", shuffle_partitions)
    validation.checks = [*checks, *run_report_checks(suite, reports)]
    validation.data_docs_page = page
    return _finish(validation, locations, started, echo)


def _gx_run_name(validation: Validation) -> str:
    """How the result is named in Data Docs: run-<run_id> or table-<time>."""
    return validation.validation_id if validation.scope == "table" else f"run-{validation.validation_id}"


def _finish(validation: Validation, locations: Locations, started: float, echo: Callable[[str], None]) -> Validation:
    validation.duration_s = round(time.monotonic() - started, 2)
    validation.decide()
    storage.write_json(join(locations.runs, f"{validation.validation_id}{RESULTS_SUFFIX}"), validation.to_dict())
    echo(validation.summary())
    return validation


def validate_run(
    spark: SparkSession,
    spec: PipelineSpec,
    locations: Locations,
    report: dict[str, Any],
    suite: Suite | None = None,
    echo: Callable[[str], None] = print,
) -> Validation:
    """Validates the rows one run committed, and its row accounting."""
    files = committed_files(CheckpointLog(locations), report["batch_ids"])
    validation = Validation(
        pipeline=spec.name,
        scope="run",
        validation_id=report["run_id"],
        run_ids=[report["run_id"]],
        validated_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    return _validate(spark, spec, locations, suite or load_suite(spec), validation, [report], files, echo)


def validate_table(
    spark: SparkSession,
    spec: PipelineSpec,
    locations: Locations,
    suite: Suite | None = None,
    echo: Callable[[str], None] = print,
) -> Validation:
    """Validates the whole committed table, and the row accounting summed over all runs."""
    now = datetime.now(UTC)
    reports = [r for r in load_reports(locations) if r["batch_ids"]]
    validation = Validation(
        pipeline=spec.name,
        scope="table",
        validation_id=f"table-{now.strftime('%Y%m%dT%H%M%SZ')}",
        run_ids=[r["run_id"] for r in reports],
        validated_at=now.isoformat(timespec="seconds"),
    )
    return _validate(spark, spec, locations, suite or load_suite(spec), validation, reports, None, echo)


def latest_report(locations: Locations, run_id: str | None = None) -> dict[str, Any]:
    """The report of run `run_id`, or of the latest run that ended (succeeded or stopped)."""
    reports = load_reports(locations)
    if run_id is not None:
        for report in reports:
            if report["run_id"] == run_id:
                return report
        raise ValidationError(f"no run {run_id} in {locations.runs}")
    finished = [r for r in reports if r["status"] in ("succeeded", "stopped")]
    if not finished:
        raise ValidationError(f"no finished run to validate in {locations.runs}; run the pipeline first")
    return finished[-1]
