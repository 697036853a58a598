"""Reading the logs after they compact: 25+ batches, one landed file each.

Spark compacts the file sink log every 10 batches (a `.compact` file holds every entry so
far), and once more than `minBatchesToRetain` batches have run it deletes the plain files a
compaction covers; the landing source compacts its index of each landing folder every 10
parts. The checkpoint readers must still say, batch by batch, which files a batch read and
which it committed, and of a folder, which files were taken.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq

from jobs.accounting.checkpoint import CheckpointLog
from tests.helpers import event, land_in_order, run_pipeline
from tests.model import BatchResult, ClickstreamModel

T0 = datetime(2023, 7, 30, 10, 0, tzinfo=UTC)
FILES = 26


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def delete_what_compaction_covers(folder: Path, compact_batch: int) -> None:
    """What Spark's log retention does: remove the plain files of batches before a compaction."""
    for path in folder.iterdir():
        name = path.name.lstrip(".").removesuffix(".crc")
        if name.isdigit() and int(name) < compact_batch:
            path.unlink()


def written_rows(paths: list[str]) -> int:
    return sum(pq.ParquetFile(Path(p.removeprefix("file:"))).metadata.num_rows for p in paths)


def test_batches_stay_readable_after_spark_compacts_its_logs(spark, clickstream, locations):
    files = {f"part-{i:02d}.json": [event(f"u{i % 3}", at(2 * i)), event("u9", at(2 * i + 0.5))] for i in range(FILES)}
    land_in_order(locations.landing, files)

    report = run_pipeline(spark, clickstream, locations, max_files_per_trigger=1)

    log = CheckpointLog.of(locations)
    source_log, sink_log = Path(locations.checkpoint) / "sources" / "0", Path(locations.output) / "_spark_metadata"
    assert {"9.compact", "19.compact"} <= {p.name for p in sink_log.iterdir()}
    assert {str(i) for i in range(FILES)} <= {p.name for p in source_log.iterdir()}  # an entry a batch
    [landing_folder] = (source_log / "folders").glob("[0-9a-f]*")  # the landing's one folder, compacted
    assert {p.name for p in landing_folder.iterdir() if not p.name.startswith(".")} == {
        "19.compact",
        *map(str, range(20, FILES)),
    }

    # The model, batch by batch (a file each, then a batch with no data once the watermark
    # moved): what each batch writes.
    model, written, data_batches = ClickstreamModel(), {}, []
    for batch_id in report.batch_ids:
        read = log.source_files(batch_id)
        result = BatchResult()
        model._batch(files[Path(read[0]).name] if read else [], result)
        written[batch_id] = len(result.emitted)
        data_batches += [batch_id] if read else []

    def check(known_from: int) -> None:
        # Each data batch read exactly its one file, in landing order, compacted or not.
        read = [log.source_files(b) for b in data_batches]
        assert [Path(paths[0]).name for paths in read] == list(files) and all(len(p) == 1 for p in read)
        # Each batch the sink log still knows lists the files that batch wrote.
        for batch_id in report.batch_ids:
            committed = log.sink_files(batch_id)
            assert (committed is None) == (batch_id < known_from), f"batch {batch_id}"
            if committed is not None:
                assert written_rows(committed) == written.get(batch_id, 0), f"batch {batch_id}"

    check(known_from=0)  # every plain file there; batches 9 and 19 only in their compact files
    delete_what_compaction_covers(sink_log, 9)
    check(known_from=10)  # batches 0-8 now only in 9.compact; the sink cannot tell 9's own from 0-8's

    # The run's accounting stays exact across the compactions.
    whole = ClickstreamModel().run(list(files.values()))
    assert (report.input_rows, report.used_rows, report.late_rows_dropped) == (
        whole.input_rows,
        whole.used_rows,
        whole.late_rows_dropped,
    )
    assert report.output_rows == sum(written.values()) == len(whole.emitted)
    assert len(data_batches) == FILES >= 25

    # What the source took, from its index: of the landing's folder, every file; nothing of another.
    taken = log.source_log(0, locations.landing)
    everything = taken.all_taken()
    assert sorted(Path(uri).name for uri in everything) == sorted(files)
    assert taken.taken_in([f"{locations.landing}/part-99.json"]) == everything
    assert taken.taken_in([f"{locations.landing}/dt=2023-07-30/x.json"]) == {}
