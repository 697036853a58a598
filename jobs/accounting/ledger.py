"""The pipeline's own files beside Spark's, in <checkpoint>/_pipeline/ (the ledger):

declaration.json   the checkpoint contract the checkpoint was started with
declaration.yaml   the declaration it was started with, as written (when loaded from a file)
rolled_back.json   the rollback that made this checkpoint the one in use again (jobs/change/rebuild.py)
schema.json        the schema inferred by the first run, for `schema: infer` sources
accounting/N       batch N's exact row account, written once the batch is accounted
metrics/N          batch N's lines read per source and what only Spark counted, from its progress
outlived.json      the parts of the declaration a checkpoint outlives a change of (a `where`), as the last run had them
closed.json        a backfill's range closed: the batch whose watermark passed every window (jobs/backfill/stage.py)
retention.json     how far retention has looked at accounted batches (jobs/run/retention.py)
listing.json       per source, the newest dated folder taken and the last whole listing (jobs/run/pending.py)
quarantined_files.json  landed files quarantined by hand, with the reason (python -m jobs quarantine-file)
retired.json       the build that replaced this checkpoint's (jobs/change/rebuild.py): no run resumes it
previous_builds.json  builds this one replaced, kept for a rollback until retention removes them
lock               one run at a time (jobs/lake/locks.py)
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from jobs.accounting.checkpoint import CheckpointLog
from jobs.declare import PipelineBase
from jobs.lake import fs
from jobs.lake.layout import from_spark, join
from jobs.units import jobs_command


class _Committed(msgspec.Struct):
    committed_at: str | None = None


_COMMITTED = msgspec.json.Decoder(_Committed)

# Parts of the checkpoint contract added after checkpoints were started without them: such a
# checkpoint is taken to match them, and its next run records them.
LATER_PARTS = ("types",)


class IncompatibleCheckpoint(RuntimeError):
    """The declaration changed in a way the checkpoint cannot resume from."""


def _numbered(folder: str) -> set[int]:
    return {int(name) for name in fs.list_names(folder) if name.isdigit()}


class Ledger:
    def __init__(self, uri: str):
        self.uri = uri

    # Batch accounts (jobs/accounting/batches.py).
    def accounted_batches(self) -> set[int]:
        return _numbered(join(self.uri, "accounting"))

    def read_account(self, batch_id: int) -> dict[str, Any]:
        account = fs.read_json(join(self.uri, "accounting", str(batch_id)))
        if account.get("files") and account.get("file_names") != "location":
            # Written before accounts named files as the product does: they held Spark's URIs.
            account["files"] = [f | {"path": from_spark(f["path"])} for f in account["files"]]
        return account

    def committed_at(self, batch_id: int) -> str | None:
        """When batch `batch_id` committed, as its account says, without the rest of the
        account (a first batch of 100,000 files holds 31 MB of them: 0.26 s read whole)."""
        data = fs.read_bytes(join(self.uri, "accounting", str(batch_id)))
        return _COMMITTED.decode(data).committed_at

    def write_account(self, batch_id: int, account: dict[str, Any]) -> None:
        fs.write_json(join(self.uri, "accounting", str(batch_id)), account | {"file_names": "location"})

    # Spark's own counts of a batch, kept from its progress event (Spark does not keep them).
    def write_metrics(self, batch_id: int, metrics: dict[str, Any]) -> None:
        fs.write_json(join(self.uri, "metrics", str(batch_id)), metrics)

    def read_metrics(self, batch_id: int) -> dict[str, Any] | None:
        """None when the run that committed the batch stopped before its progress was seen."""
        uri = join(self.uri, "metrics", str(batch_id))
        return fs.read_json(uri) if fs.exists(uri) else None

    # The parts of the declaration a checkpoint outlives a change of (patterns/base.py `outlived`).
    def recorded_outlived(self) -> dict[str, Any] | None:
        return fs.read_json_if_there(join(self.uri, "outlived.json"))

    def record_outlived(self, parts: dict[str, Any]) -> None:
        fs.write_json(join(self.uri, "outlived.json"), parts)

    # A backfill's closed range: the batch planned to pass every held window (jobs/backfill/stage.py).
    def closing_batch(self) -> int | None:
        said = fs.read_json_if_there(join(self.uri, "closed.json"))
        return said["batch"] if said else None

    def record_closing_batch(self, batch_id: int, watermark_ms: int) -> None:
        fs.write_json(join(self.uri, "closed.json"), {"batch": batch_id, "watermark_ms": watermark_ms})

    # Retention: every batch up to the mark has had its landed files seen to.
    def retention_mark(self) -> int:
        uri = join(self.uri, "retention.json")
        return fs.read_json(uri)["through_batch"] if fs.exists(uri) else -1

    def record_retention_mark(self, batch_id: int) -> None:
        fs.write_json(join(self.uri, "retention.json"), {"through_batch": batch_id})

    # How a dated landing is listed: per source, the newest day taken and when it was last listed whole.
    def listing_state(self) -> dict[str, dict[str, Any]]:
        said = fs.read_json_if_there(join(self.uri, "listing.json"))
        return said["sources"] if said else {}

    def record_listing_state(self, sources: dict[str, dict[str, Any]]) -> None:
        fs.write_json(join(self.uri, "listing.json"), {"sources": sources})

    # Validation: every batch up to the mark has had its rows validated. Written by validations,
    # which may overlap (a run's, `validate`): at worst a later one checks a batch again.
    def validated_through(self) -> int | None:
        """None: no validation has said (a checkpoint from before the mark was kept)."""
        said = fs.read_json_if_there(join(self.uri, "validated.json"))
        return said["through_batch"] if said else None

    def record_validated_through(self, batch_id: int) -> None:
        fs.write_json(join(self.uri, "validated.json"), {"through_batch": batch_id})

    # Landed files quarantined by hand: the run that reads one quarantines its lines unread.
    def quarantined_files(self) -> dict[str, dict[str, str]]:
        """Landed file (as jobs/lake/layout.py names it) -> {"reason", "at"}."""
        uri = join(self.uri, "quarantined_files.json")
        return fs.read_json(uri)["files"] if fs.exists(uri) else {}

    def quarantine_file(self, path: str, reason: str, at: str) -> None:
        files = self.quarantined_files() | {path: {"reason": reason, "at": at}}
        fs.write_json(join(self.uri, "quarantined_files.json"), {"files": files})

    # A rebuild's switch retires the checkpoint it replaced; its rollback brings it back.
    def retired(self) -> dict[str, Any] | None:
        uri = join(self.uri, "retired.json")
        return fs.read_json(uri) if fs.exists(uri) else None

    def retire(self, by_build: str, at: str, checkpoint: str) -> None:
        fs.write_json(join(self.uri, "retired.json"), {"by_build": by_build, "at": at, "checkpoint": checkpoint})

    def unretire(self) -> None:
        fs.remove_file(join(self.uri, "retired.json"))

    # Builds this one replaced (jobs/change/rebuild.py), until retention removes them (jobs/run/retention.py).
    def previous_builds(self) -> list[dict[str, Any]]:
        return fs.read_json_if_there(join(self.uri, "previous_builds.json")) or []

    def record_previous_builds(self, builds: list[dict[str, Any]]) -> None:
        fs.write_json(join(self.uri, "previous_builds.json"), builds)

    # An inferred schema, recorded by the first run and used by every later one.
    def recorded_schema(self) -> dict[str, str] | None:
        uri = join(self.uri, "schema.json")
        return fs.read_json(uri)["fields"] if fs.exists(uri) else None

    def record_schema(self, fields: dict[str, str], inferred_from: str) -> None:
        fs.write_json(join(self.uri, "schema.json"), {"inferred_from": inferred_from, "fields": fields})

    # The checkpoint contract.
    def recorded_contract(self) -> dict[str, Any] | None:
        uri = join(self.uri, "declaration.json")
        return fs.read_json(uri) if fs.exists(uri) else None

    def record_contract(self, contract: dict[str, Any], declaration_yaml: str | None = None) -> None:
        """The contract the checkpoint was started with, and the declaration's YAML: written by
        its first run, once; a part added to contracts since (LATER_PARTS) by the next run."""
        recorded = self.recorded_contract()
        if recorded is None:
            if declaration_yaml is not None:
                fs.write_text(self.declaration_yaml, declaration_yaml)
            fs.write_json(join(self.uri, "declaration.json"), contract)
            return
        missing = {part: contract[part] for part in LATER_PARTS if part in contract and part not in recorded}
        if missing:
            fs.write_json(join(self.uri, "declaration.json"), recorded | missing)

    @property
    def declaration_yaml(self) -> str:
        """Where the declaration the checkpoint was started with is kept (if it is)."""
        return join(self.uri, "declaration.yaml")

    # A rollback to this checkpoint's build: a run of the declaration as it is now is refused
    # with the way back to the declaration this build was made with.
    def rolled_back(self) -> dict[str, Any] | None:
        return fs.read_json_if_there(join(self.uri, "rolled_back.json"))

    def record_rollback(self, from_build: str, at: str) -> None:
        fs.write_json(join(self.uri, "rolled_back.json"), {"from_build": from_build, "at": at})

    def move_output(self, output: str) -> None:
        """The checkpoint writes `output` from now on (a rebuild's switch to a Delta table
        it copied its rows into): its contract says so, the rest as recorded."""
        fs.write_json(join(self.uri, "declaration.json"), (self.recorded_contract() or {}) | {"output": output})


def with_recorded_schema(pipeline: PipelineBase, ledger: Ledger) -> PipelineBase:
    """The declaration with its recorded schema filled in (unchanged if it declares one,
    or if no run has recorded one yet)."""
    fields = ledger.recorded_schema() if pipeline.source.infer_schema else None
    if not fields:
        return pipeline
    return pipeline.model_copy(update={"source": pipeline.source.with_recorded_fields(fields)})


def with_quarantined_files(pipeline: PipelineBase, ledger: Ledger) -> PipelineBase:
    """The declaration with the files quarantined by hand on each source (unchanged if none)."""
    files = {path: entry["reason"] for path, entry in ledger.quarantined_files().items()}
    if not files:
        return pipeline
    update: dict = {"source": pipeline.source.with_quarantined_files(files)}
    join = getattr(pipeline, "join", None)
    if join is not None:
        update["join"] = join.model_copy(update={"source": join.source.with_quarantined_files(files)})
    return pipeline.model_copy(update=update)


def _refuse_retired(pipeline_name: str, ledger: Ledger, checkpoint_log: CheckpointLog) -> None:
    """A checkpoint a rebuild's switch retired is the previous build's: runs use the new one."""
    retired = ledger.retired()
    if retired:
        raise IncompatibleCheckpoint(
            f"checkpoint {checkpoint_log.checkpoint} was retired at {retired['at']} by build {retired['by_build']}, "
            f"whose checkpoint {retired['checkpoint']} the pipeline's runs use "
            f"(`{jobs_command('rebuild', pipeline_name, '--rollback')}` goes back)"
        )


def check_contract(
    pipeline_name: str, contract: dict[str, Any], ledger: Ledger, checkpoint_log: CheckpointLog, quarantine: str
) -> None:
    """Refuse to resume a checkpoint whose query the declaration no longer describes.

    Runs before Spark starts, so a refused run changes nothing. Trigger, rate limits,
    watermark delay and the event time's format may change between runs.
    """
    fresh_start = (
        f"To start fresh, move aside {checkpoint_log.checkpoint}, {checkpoint_log.output} and {quarantine} "
        "(or run with a new --root); the next run then reprocesses every landed file."
    )
    if checkpoint_log.output_has_other_log():
        raise IncompatibleCheckpoint(
            f"output {checkpoint_log.output} already holds a table written under another checkpoint, "
            f"and checkpoint {checkpoint_log.checkpoint} is new: Spark would skip batches it believes are written. "
            + fresh_start
        )
    _refuse_retired(pipeline_name, ledger, checkpoint_log)
    recorded = ledger.recorded_contract()
    if recorded is None:
        if checkpoint_log.has_started():
            raise IncompatibleCheckpoint(
                f"checkpoint {checkpoint_log.checkpoint} was not started by this runner "
                f"(no _pipeline/declaration.json). {fresh_start}"
            )
        return
    _refuse_changes(pipeline_name, contract_changes(recorded, contract), ledger, checkpoint_log, fresh_start)


def _refuse_changes(
    pipeline_name: str, changes: list[str], ledger: Ledger, checkpoint_log: CheckpointLog, fresh_start: str
) -> None:
    """Refuse a declaration changed in ways Spark cannot resume from, saying the way on: the
    declaration a rollback went back to, or a rebuild."""
    rolled_back = ledger.rolled_back()
    if changes and rolled_back:
        raise IncompatibleCheckpoint(
            f"pipeline '{pipeline_name}' is declared differently from the build `rebuild --rollback` went back to "
            f"at {rolled_back['at']} (from build {rolled_back['from_build']}), whose checkpoint "
            f"{checkpoint_log.checkpoint} runs resume: {'; '.join(changes)}. Put back the declaration that build "
            f"was made with ({_kept_declaration(ledger)}), then run again; or, to go forward with the declaration "
            f"as it is, `python -m jobs rebuild {pipeline_name}`."
        )
    if changes:
        raise IncompatibleCheckpoint(
            f"pipeline '{pipeline_name}' changed since checkpoint {checkpoint_log.checkpoint} was started, "
            f"in ways Spark cannot resume from: {'; '.join(changes)}. "
            f"`python -m jobs rebuild {pipeline_name}` reads every landed file again under the declaration into a new "
            f"build and switches to it; `python -m jobs plan {pipeline_name}` shows what it would read. {fresh_start}"
        )


def _kept_declaration(ledger: Ledger) -> str:
    if fs.exists(ledger.declaration_yaml):
        return f"kept as {ledger.declaration_yaml}"
    return f"its contract: {join(ledger.uri, 'declaration.json')}"


def contract_changes(recorded: dict[str, Any], contract: dict[str, Any]) -> list[str]:
    """Each part of the checkpoint contract that differs: `part: before -> after`, or for
    a list of settings (aggregates) the items added and removed."""
    changes = []
    for key in sorted(set(recorded) | set(contract)):
        before, after = recorded.get(key), contract.get(key)
        if before == after or (key in LATER_PARTS and key not in recorded):
            continue
        if isinstance(before, list) and isinstance(after, list) and all(isinstance(i, dict) for i in before + after):
            added = [item for item in after if item not in before]
            removed = [item for item in before if item not in after]
            said = [f"added {_item(item)}" for item in added] + [f"removed {_item(item)}" for item in removed]
            changes.append(f"{key}: {', '.join(said) or 'reordered'}")
        elif isinstance(before, dict) and isinstance(after, dict):  # the types of the fields held
            said = [
                f"{path} {before.get(path, '(not held)')} -> {after.get(path, '(not held)')}"
                for path in sorted(set(before) | set(after))
                if before.get(path) != after.get(path)
            ]
            changes.append(f"{key}: {', '.join(said)}")
        else:
            changes.append(f"{key}: {before!r} -> {after!r}")
    return changes


def outlived_changes(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Each change of the parts a checkpoint outlives: `where: before -> after`, and each
    computed column added, removed or changed (None: not declared)."""
    changes = []
    for key in sorted(set(recorded) | set(now)):
        before, after = recorded.get(key), now.get(key)
        if not key.endswith("columns"):
            changes += [f"{key}: {before!r} -> {after!r}"] if before != after else []
            continue
        side = key.removesuffix("columns")
        before, after = before or {}, after or {}
        changes += [
            f"{side}column {name!r}: {before.get(name)!r} -> {after.get(name)!r}"
            for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name)
        ]
    return changes


def _item(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True)
