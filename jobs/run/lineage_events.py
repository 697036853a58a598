"""The OpenLineage events of a run, as jobs/run/lineage.py says what they hold: a run's
`Lineage` hears its events and sends their OpenLineage runs through the client."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import attr
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.generated import parent_run
from openlineage.client.generated.base import RunFacet
from openlineage.client.generated.error_message_run import ErrorMessageRunFacet
from openlineage.client.generated.input_statistics_input_dataset import InputStatisticsInputDatasetFacet
from openlineage.client.generated.job_type_job import JobTypeJobFacet
from openlineage.client.generated.output_statistics_output_dataset import OutputStatisticsOutputDatasetFacet
from openlineage.client.generated.processing_engine_run import ProcessingEngineRunFacet
from openlineage.client.generated.schema_dataset import SchemaDatasetFacet, SchemaDatasetFacetFields
from openlineage.client.generated.symlinks_dataset import Identifier, SymlinksDatasetFacet
from openlineage.client.uuid import generate_new_uuid

from jobs import declare
from jobs.lake.landing import source_landings
from jobs.run.context import run_log
from jobs.run.events import Finished, ReportStored, Started

if TYPE_CHECKING:
    from jobs.declare import PipelineBase
    from jobs.request import RunRequest
    from jobs.run.events import Event
    from jobs.run.report import RunReport


PRODUCER = f"urn:trigger-once-pipelines:{version('trigger-once-pipelines')}"
FACET = "triggerOnce_account"  # the run facet of the row account (docs/lineage.md)
SCHEMA_URL = "urn:trigger-once-pipelines:facets:account:1"


def dataset(location: str) -> tuple[str, str]:
    """A location's OpenLineage dataset naming: (s3://bucket, key) or (file, absolute path)."""
    scheme, found, rest = location.partition("://")
    if not found:
        return "file", location
    if scheme in ("s3", "s3a", "s3n"):
        bucket, _, key = rest.partition("/")
        return f"s3://{bucket}", key.rstrip("/")
    return f"{scheme}://{rest.partition('/')[0]}", "/" + rest.partition("/")[2]


def namespace() -> str:
    """The jobs' OpenLineage namespace, as the OpenLineage integrations read it."""
    return os.getenv("OPENLINEAGE_NAMESPACE") or "default"


@dataclass
class Lineage:
    """Listens to a run's events (jobs/run/events.py) and says them in OpenLineage; one per
    run request (a group's requests each have theirs)."""

    request: RunRequest
    pipeline: PipelineBase | None = None  # None: the one its name loads, when it starts
    run_uuid: str = ""
    report: RunReport | None = None
    report_uri: str | None = None
    client: Any = field(default=None, repr=False)

    def __call__(self, event: Event) -> None:
        try:
            if isinstance(event, Started):
                self._started()
            elif isinstance(event, ReportStored):
                self.report, self.report_uri = event.report, event.uri
            elif isinstance(event, Finished) and self.run_uuid:
                self._finished(event)
        except Exception as error:  # noqa: BLE001 - a transport's trouble: lineage never fails a run
            run_log(self.request.pipeline).warning("  lineage: an OpenLineage event was not sent: %s", error)

    def _started(self) -> None:
        self.pipeline = self.pipeline or declare.load(self.request.pipeline)
        self.client, self.run_uuid = OpenLineageClient(), str(generate_new_uuid())
        self._emit("START", self._run_facets(None), None)

    def _finished(self, finished: Finished) -> None:
        state = {"succeeded": "COMPLETE", "failed": "FAIL"}.get(str(finished.status), "ABORT")
        report = finished.report or self.report
        facets = self._run_facets(report, finished.validation)
        if finished.error:
            facets["errorMessage"] = ErrorMessageRunFacet(
                message=finished.error, programmingLanguage="python", producer=PRODUCER
            )
        try:
            self._emit(state, facets, report)
        finally:
            self.client.close()  # what a transport holds back (a batch, a connection) is sent now

    def _run_facets(self, report: RunReport | None, validation: str | None = None) -> dict[str, Any]:
        facets: dict[str, Any] = {
            "processing_engine": ProcessingEngineRunFacet(
                version=version("pyspark"),
                name="spark",
                openlineageAdapterVersion=version("openlineage-python"),
                producer=PRODUCER,
            )
        }
        parent = _parent()
        if parent is not None:
            facets["parent"] = parent
        if report is not None:
            facets[FACET] = AccountRunFacet.of(report, self.report_uri, validation)
        return facets

    def _emit(self, state: str, run_facets: dict[str, Any], report: RunReport | None) -> None:
        job_type = JobTypeJobFacet(processingType="STREAMING", integration="SPARK", jobType="JOB", producer=PRODUCER)
        event = RunEvent(
            eventType=RunState[state],
            eventTime=datetime.now(UTC).isoformat(),
            run=Run(runId=self.run_uuid, facets=run_facets),
            job=Job(namespace=namespace(), name=self.pipeline.name, facets={"jobType": job_type}),
            inputs=self._inputs(report),
            outputs=[self._output(report)],
            producer=PRODUCER,
        )
        self.client.emit(event)

    def _inputs(self, report: RunReport | None) -> list[Any]:
        locations = self.request.locations
        landings = source_landings(locations.landing, [s.name for s in self.pipeline.sources])
        read = {}
        if report is not None and len(landings) == 1:
            read["inputStatistics"] = InputStatisticsInputDatasetFacet(
                rowCount=report.input_rows, fileCount=report.input_files, producer=PRODUCER
            )
        upstream = self.pipeline.source.table  # another pipeline's table: its output, as it named it
        facets = {"symlinks": _table_symlink(upstream)} if upstream else {}
        inputs = [InputDataset(*dataset(landing), facets=facets, inputFacets=read) for landing in landings]
        if self.pipeline.enrich is not None:
            inputs.append(InputDataset(*dataset(self.pipeline.enrich.location(locations.dimensions))))
        return inputs

    def _output(self, report: RunReport | None) -> Any:
        facets: dict[str, Any] = {"symlinks": _table_symlink(self.pipeline.name)}
        columns = _columns(self.request) if report is not None else None
        if columns:
            fields = [SchemaDatasetFacetFields(name=name, type=kind) for name, kind in columns.items()]
            facets["schema"] = SchemaDatasetFacet(fields=fields, producer=PRODUCER)
        written = {}
        if report is not None and report.output_rows is not None:
            written["outputStatistics"] = OutputStatisticsOutputDatasetFacet(
                rowCount=report.output_rows, producer=PRODUCER
            )
        return OutputDataset(*dataset(self.request.locations.output), facets=facets, outputFacets=written)


def _table_symlink(pipeline_name: str) -> Any:
    """The table a pipeline writes, by name (its folder is a build's: a rebuild writes another)."""
    table = Identifier(namespace=namespace(), name=pipeline_name, type="TABLE")
    return SymlinksDatasetFacet(identifiers=[table], producer=PRODUCER)


def _columns(request: RunRequest) -> dict[str, str] | None:
    """The table's columns and types as the table says them (None: no table yet, or unreadable)."""
    from jobs.accounting.checkpoint import CheckpointLog, table_schema

    try:
        return table_schema(CheckpointLog.of(request.locations))
    except Exception:  # noqa: BLE001 - the schema is a facet: its absence is no failure
        return None


def _parent() -> Any:
    """The run's parent (and root), as OPENLINEAGE_PARENT_ID says it: the Airflow task's run."""
    parent = os.getenv("OPENLINEAGE_PARENT_ID", "").split("/")
    root = os.getenv("OPENLINEAGE_ROOT_PARENT_ID", "").split("/")
    if len(parent) != 3 or not all(parent):
        return None
    root = root if len(root) == 3 and all(root) else parent
    return parent_run.ParentRunFacet(
        run=parent_run.Run(runId=parent[2]),
        job=parent_run.Job(namespace=parent[0], name=parent[1]),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=root[2]), job=parent_run.RootJob(namespace=root[0], name=root[1])
        ),
        producer=PRODUCER,
    )


@attr.define
class AccountRunFacet(RunFacet):
    """The run's row account, as its run report has it (jobs/run/report.py)."""

    runId: str
    report: str | None
    status: str
    trigger: str
    batches: list[int]
    inputFiles: int
    inputRows: int
    usedRows: int
    quarantinedRows: int
    filteredRows: int
    lateRowsDropped: int
    duplicatesDropped: int | None
    outputRows: int | None
    balances: bool
    quarantineReasons: dict[str, int] | None
    rules: dict[str, dict[str, Any]]
    validation: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return SCHEMA_URL

    @classmethod
    def of(cls, report: RunReport, uri: str | None, validation: str | None) -> AccountRunFacet:
        reasons = report.quarantine_reasons
        return cls(
            runId=report.run_id,
            report=uri,
            status=str(report.status),
            trigger=report.trigger,
            batches=list(report.batch_ids),
            inputFiles=report.input_files,
            inputRows=report.input_rows,
            usedRows=report.used_rows,
            quarantinedRows=report.quarantined_rows,
            filteredRows=report.filtered_rows,
            lateRowsDropped=report.late_rows_dropped,
            duplicatesDropped=report.duplicates_dropped,
            outputRows=report.output_rows,
            balances=report.rows_balance,
            quarantineReasons=None if reasons is None else {r: q.rows for r, q in reasons.items()},
            rules={name: {"action": r.action, "violations": r.violations} for name, r in report.rules.items()},
            validation=validation,
            producer=PRODUCER,
        )
