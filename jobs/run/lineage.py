"""A run's OpenLineage events: START when it starts, then COMPLETE (it succeeded), FAIL (it
failed) or ABORT (refused or stopped: it changed nothing, or stopped cleanly), each with the
run's inputs (its landings, a dimension) and its table, through the OpenLineage client to the
transport the client's own configuration names (OPENLINEAGE_CONFIG, an openlineage.yml,
OPENLINEAGE__TRANSPORT__* or OPENLINEAGE_URL; OPENLINEAGE_DISABLED=true turns it off). With
none configured nothing is emitted: the client would print every event on the console.

    job      OPENLINEAGE_NAMESPACE (default "default") / the pipeline's name
    run      a new UUID; our run id, the run report and the row account are its
             `triggerOnce_account` facet, the error its errorMessage facet
    parent   OPENLINEAGE_PARENT_ID and OPENLINEAGE_ROOT_PARENT_ID ("namespace/job/runId"), as
             the Airflow OpenLineage provider's macros give them: the task the run is a child of
    datasets a location's OpenLineage name (s3://bucket + key; file + path); the table with its
             schema, its rows written and its pipeline's name as a symlink (a rebuild's table
             is another folder, the same table)

An event that cannot be sent is logged and the run goes on: lineage never fails a run.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobs.declare import PipelineBase
    from jobs.request import RunRequest
    from jobs.run.events import Emit, Event


def configured() -> bool:
    """Whether the user configured a transport for the OpenLineage client (its own ways):
    without one, it would print every event. The client is imported only when some sign of
    one is there (it takes a few tenths of a second)."""
    if os.getenv("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return False
    if os.getenv("OPENLINEAGE_URL"):
        return True
    files = (Path("openlineage.yml"), Path("~/.openlineage/openlineage.yml").expanduser())
    signs = os.getenv("OPENLINEAGE_CONFIG") or any(k.startswith("OPENLINEAGE__") for k in os.environ)
    if not (signs or any(f.is_file() for f in files)):
        return False
    from openlineage.client import OpenLineageClient

    try:
        return bool((OpenLineageClient().config.transport or {}).get("type"))
    except Exception as error:  # noqa: BLE001 - the client refuses its configuration: lineage never fails a run
        logging.getLogger(__name__).warning("OpenLineage is configured, but its client refuses it: %s", error)
        return False


def listeners(requests: list[RunRequest], pipeline: PipelineBase | None = None) -> Emit | None:
    """What says the runs of `requests` in OpenLineage as they go (`pipeline`: the one
    request's declaration, when not the one its name loads); None: no transport configured."""
    if not configured():
        return None
    from jobs.run.lineage_events import Lineage

    lineages = {request.pipeline: Lineage(request, pipeline) for request in requests}

    def listen(event: Event) -> None:
        if event.pipeline in lineages:
            lineages[event.pipeline](event)

    return listen
