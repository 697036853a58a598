"""A processor of a team's own (issue 73): a class in its declarations folder, on Spark's
transformWithStateInPandas (list, value and map state, event-time timers, TTL), run on real
availableNow queries with real checkpoints; every row accounted, the tables compared with
what the landed lines say, worked out here by hand. Each test writes its module under a name
of its own: a module stays imported in the test worker's Python."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from jobs import declare
from jobs.change import rebuild
from jobs.change.plan import REPROCESS, RESUMES, plan
from jobs.cli import main
from jobs.flow.patterns import pattern_of
from jobs.lake.builds import in_use
from jobs.lake.layout import Locations
from jobs.run.failure import state_reshaped
from jobs.run.runner import RunFailed, RunRefused
from tests.helpers import REPO, land_in_order, own_module, run_pipeline

SESSIONS = '''
import pandas as pd

from jobs.processors.base import ProcessorSettings
from jobs.processors.own import StatefulProcessor
from jobs.units import Duration


class Sessions(StatefulProcessor):
    """One row per closed session: a user's payments no more than `gap` apart."""

    class Settings(ProcessorSettings):
        gap: Duration = 3600

    output = [("session_start", "timestamp"), ("session_end", "timestamp"), ("total", "double"), ("payments", "long")]
    inputs = ("amount",)

    def init(self, handle):
        self.handle = handle
        self.open = handle.getListState("open", "t timestamp, amount double")
        self.closed = handle.getValueState("closed", "n long")  # sessions closed so far

    def handleInputRows(self, key, rows, timerValues):
        frame = pd.concat(list(rows))
        if key[0] == "mallory":
            raise ValueError("mallory's payments are not ours to add")
        new = list(zip(frame["event_time"].dt.to_pydatetime(), frame["amount"].astype(float)))
        yield from self.closing(key, new, timerValues.getCurrentWatermarkInMs())

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        yield from self.closing(key, [], timerValues.getCurrentWatermarkInMs())

    def closing(self, key, new, watermark_ms):
        gap = pd.Timedelta(seconds=self.settings.gap)
        kept = [tuple(row) for row in self.open.get()] if self.open.exists() else []
        sessions = []
        for t, amount in sorted(kept + new):
            if sessions and t - sessions[-1][-1][0] <= gap:
                sessions[-1].append((t, amount))
            else:
                sessions.append([(t, amount)])
        watermark = pd.Timestamp(watermark_ms, unit="ms")
        done = [s for s in sessions if s[-1][0] + gap < watermark]
        still_open = [s for s in sessions if s[-1][0] + gap >= watermark]
        for timer in self.handle.listTimers():
            self.handle.deleteTimer(timer)
        if still_open:
            self.open.put([row for s in still_open for row in s])
            ends = min(s[-1][0] for s in still_open) + gap
            self.handle.registerTimer(pd.Timestamp(ends).value // 1_000_000 + 1)  # once the watermark passes it
        else:
            self.open.clear()
        before = self.closed.get()[0] if self.closed.exists() else 0
        self.closed.update((before + len(done),))
        out = [(*key, s[0][0], s[-1][0], sum(a for _, a in s), len(s)) for s in done]
        yield pd.DataFrame(out, columns=["user_id", *(name for name, _ in self.output)])
'''

# docs/python.md's processors (its worked example's module): FirstSeen forgets a user after
# `forget_after` of wall-clock time without a visit (TTL, which Spark allows in processing time).
PAGE = (REPO / "docs" / "python.md").read_text()
DOCUMENTED = re.findall(r"```python\n(.*?)```", PAGE.split("### Worked example: payment sessions", 1)[1], re.S)[0]


MISTAKES = """

class NotOurs:
    pass


class Regional(FirstSeen):
    class Settings(ProcessorSettings):
        region: str  # no default: a declaration must say it


class Mistyped(FirstSeen):
    output = [("first_seen", "timestmp"), ("visits", "long")]


class Keyed(FirstSeen):
    output = [("user_id", "string"), ("visits", "long")]
"""


def payment(user: str, clock: str, amount: float) -> str:
    return json.dumps({"user_id": user, "ts": f"2024-05-01T{clock}Z", "amount": amount})


def visit(user: str, clock: str, kind: str = "view") -> str:
    return json.dumps({"user_id": user, "ts": f"2024-05-01T{clock}Z", "event": kind})


def declare_process(folder: Path, monkeypatch, processor: str, **changes: object) -> declare.PipelineBase:
    """A process pipeline of a team's own (team_process) in `folder`, with a suite."""
    raw = {
        "name": "team_process",
        "source": {
            "format": "json",
            "schema": {"user_id": "string", "ts": "string", "amount": "double", "event": "string"},
            "required": ["user_id"],
            "event_time": {"column": "ts", "format": "iso8601"},
        },
        "keys": ["user_id"],
        "process": {"processor": processor},
        "output": {"format": "parquet"},
        **changes,
    }
    suite = {"table": "team_process", "expectations": [{"expect": "column_values_to_not_be_null", "column": "user_id"}]}
    for name, text in (("pipelines", raw), ("expectations", suite)):
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "team_process.yaml").write_text(yaml.safe_dump(text))
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder / "pipelines"))
    monkeypatch.setenv("JOBS_EXPECTATIONS_DIR", str(folder / "expectations"))
    return loaded(folder)


def loaded(folder: Path) -> declare.PipelineBase:
    """The declaration as its file says now (its processor's module imported again when changed)."""
    return declare.from_mapping(yaml.safe_load((folder / "pipelines" / "team_process.yaml").read_text()))


def edit(path: Path, *changes: tuple[str, str]) -> None:
    """The module with each (old, new) replaced: each old must be there."""
    text = path.read_text()
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2024-05-01T{clock}")


def table(spark, output: str, *columns: str) -> list[tuple]:
    return sorted(tuple(row) for row in spark.read.parquet(output).select(*columns).collect())


def counts(report) -> tuple[int, int, int, int]:
    assert report.rows_balance, report
    return report.input_rows, report.used_rows, report.quarantined_rows, report.late_rows_dropped


def test_an_own_processor_closes_sessions_on_its_timers_and_a_failed_run_is_run_again(
    spark, tmp_path, monkeypatch, caplog
):
    module = own_module(tmp_path / "pipelines", SESSIONS)
    pipeline = declare_process(
        tmp_path,
        monkeypatch,
        f"{module}:Sessions",
        process={"processor": f"{module}:Sessions", "settings": {"gap": "30 minutes"}},
        watermark="10 minutes",
    )
    assert pipeline.spark_settings.state_store == "rocksdb"  # set for it: transformWithState needs it
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    land_in_order(
        locations.landing,
        {
            "a.json": [
                payment("u1", "10:00:00", 1),
                payment("u1", "10:20:00", 2),
                payment("u2", "10:05:00", 5),
                payment("mallory", "10:06:00", 1),  # the processor raises for her: quarantined
                payment("u1", "11:30:00", 4),  # the watermark goes to 11:20: u1's first session and u2's close
            ]
        },
    )
    first = run_pipeline(spark, pipeline, locations)
    assert counts(first) == (5, 4, 1, 0)
    assert list(first.quarantine_reasons) == ["processor_error"]
    columns = ("user_id", "session_start", "session_end", "total", "payments")
    assert table(spark, locations.output, *columns) == [
        ("u1", at("10:00:00"), at("10:20:00"), 3.0, 2),
        ("u2", at("10:05:00"), at("10:05:00"), 5.0, 1),
    ]

    # Its timer handler fails: the batch the timers fire in fails and is not committed; fixed
    # (a body that keeps the output and the state), the run after it resumes, logged.
    source = (tmp_path / "pipelines" / f"{module}.py").read_text()
    broken = source.replace(
        "yield from self.closing(key, [], timerValues",
        "raise RuntimeError('timer');yield from self.closing(key, [], timerValues",
    )
    (tmp_path / "pipelines" / f"{module}.py").write_text(broken)
    land_in_order(
        locations.landing,
        {"b.json": [payment("u1", "10:40:00", 9), payment("u2", "13:00:00", 1)]},  # u1's is late (<= 11:20)
    )
    with pytest.raises(RunFailed, match=r"failed in handleExpiredTimer for key \['u1'\] \(RuntimeError: timer\)"):
        run_pipeline(spark, pipeline, locations)
    assert len(table(spark, locations.output, *columns)) == 2
    (tmp_path / "pipelines" / f"{module}.py").write_text(source + "\n# fixed\n")
    run_pipeline(spark, pipeline, locations)
    assert "resumes under a changed processor_source" in caplog.text
    assert table(spark, locations.output, *columns) == [
        ("u1", at("10:00:00"), at("10:20:00"), 3.0, 2),
        ("u1", at("11:30:00"), at("11:30:00"), 4.0, 1),  # closed by u2's 13:00 (watermark 12:50)
        ("u2", at("10:05:00"), at("10:05:00"), 5.0, 1),
    ]
    reports = [json.loads(p.read_text()) for p in sorted(Path(locations.runs).glob("*Z-??????.json"))]
    totals = [sum(r[k] for r in reports) for k in ("input_rows", "used_rows", "quarantined_rows", "late_rows_dropped")]
    assert totals == [7, 5, 1, 1]

    # A range on its own is a run on a fresh root (a backfill is refused: it would leave sessions open).
    backfill = [
        "backfill",
        pipeline.name,
        "--root",
        str(tmp_path / "root"),
        "--since",
        "2024-05-01",
        "--until",
        "2024-05-01",
    ]
    assert main([*backfill, "--publish-to", str(tmp_path / "published")]) == 2
    assert "leaves" in pattern_of(pipeline).backfill_refusal


def test_an_own_processor_forgets_after_its_ttl_its_changes_are_planned_and_rebuilt(spark, tmp_path, monkeypatch):
    module = own_module(tmp_path / "pipelines", DOCUMENTED)
    processor = f"{module}:FirstSeen"
    pipeline = declare_process(
        tmp_path, monkeypatch, processor, process={"processor": processor, "settings": {"forget_after": "45 seconds"}}
    )
    locations = Locations.resolve(pipeline.name, root=str(tmp_path / "root"))
    land_in_order(
        locations.landing,
        {"a.json": [visit("u1", "10:00:00"), visit("u2", "10:01:00", "buy"), visit("u1", "10:02:00")]},
    )
    assert counts(run_pipeline(spark, pipeline, locations)) == (3, 3, 0, 0)
    seen = time.monotonic()  # u1 was seen (its batch's time) before this
    land_in_order(locations.landing, {"b.json": [visit("u1", "11:00:00"), visit("u3", "11:01:00")]})
    run_pipeline(spark, pipeline, locations)  # u1 is known: only u3 is new
    time.sleep(max(0.0, seen + 46 - time.monotonic()))  # forget_after has passed since u1 was seen
    land_in_order(locations.landing, {"c.json": [visit("u1", "12:00:00")]})
    run_pipeline(spark, pipeline, locations)
    assert table(spark, locations.output, "user_id", "first_seen", "visits") == [
        ("u1", at("10:00:00"), 2),
        ("u1", at("12:00:00"), 1),
        ("u2", at("10:01:00"), 1),
        ("u3", at("11:01:00"), 1),
    ]

    # Other output columns: plan says reprocess, a run is refused, a rebuild makes the table again.
    path = tmp_path / "pipelines" / f"{module}.py"
    edit(
        path,
        ('("visits", "long")]', '("visits", "long"), ("days", "long")]'),
        ("first, len(frame))]", "first, len(frame), frame['event_time'].dt.date.nunique())]"),
        ('"first_seen", "visits"]', '"first_seen", "visits", "days"]'),
    )
    changed = loaded(tmp_path)
    planned = plan(spark, changed, locations)
    assert planned.verdict == REPROCESS and any("processor_output" in change for change in planned.changes), (
        planned.changes
    )
    with pytest.raises(RunRefused, match="rebuild team_process"):
        run_pipeline(spark, changed, locations)
    rebuild.rebuild(spark, changed, str(tmp_path / "root"), "days")
    built = in_use(changed.name, str(tmp_path / "root"))
    assert plan(spark, changed, built).verdict == RESUMES
    assert table(spark, built.output, "user_id", "first_seen", "days") == [
        ("u1", at("10:00:00"), 1),  # one run reads every file: u1's visit at 12:00 is within the TTL
        ("u2", at("10:01:00"), 1),
        ("u3", at("11:01:00"), 1),
    ]

    # What it keeps changes shape: the run is refused, naming the module, with the rebuild.
    edit(
        path,
        ('"first timestamp", ttl_ms', '"first timestamp, n long", ttl_ms'),
        ("self.seen.update((first.to_pydatetime(),))", "self.seen.update((first.to_pydatetime(), 1))"),
    )
    reshaped = loaded(tmp_path)
    planned = plan(spark, reshaped, built)
    assert planned.verdict == REPROCESS
    assert planned.changes == [
        f"processor_state: {processor} seen value first timestamp with TTL -> value first timestamp, n long with TTL"
    ]
    land_in_order(built.landing, {"d.json": [visit("u4", "13:00:00")]})
    with pytest.raises(RunRefused, match=rf"processor_state: {processor} seen .*rebuild team_process"):
        run_pipeline(spark, reshaped, built)


def test_an_own_processors_declaration_is_checked_when_it_loads_without_spark(tmp_path, monkeypatch):
    module = own_module(tmp_path / "pipelines", DOCUMENTED + MISTAKES)
    processor = f"{module}:FirstSeen"
    # A newcomer's mistakes, each refused as the declaration loads, naming it.
    required = {"processor": f"{module}:Regional", "settings": {"region": "eu"}}
    assert (
        declare_process(tmp_path, monkeypatch, required["processor"], process=required).process.settings.region == "eu"
    )
    with pytest.raises(declare.DeclarationError, match=r"process settings: missing 'region'"):
        declare_process(tmp_path, monkeypatch, required["processor"])
    with pytest.raises(declare.DeclarationError, match=r"'first_seen' has type 'timestmp', which is not a Spark SQL"):
        declare_process(tmp_path, monkeypatch, f"{module}:Mistyped")
    with pytest.raises(declare.DeclarationError, match=r"processor output 'user_id' is named like a key"):
        declare_process(tmp_path, monkeypatch, f"{module}:Keyed")
    with pytest.raises(declare.DeclarationError, match=r"missing 'watermark'.*Sessions registers no event-time timers"):
        declare_process(tmp_path, monkeypatch, f"{module}:Sessions")
    with pytest.raises(declare.DeclarationError, match=r"has no class 'Fristseen' \(did you mean 'FirstSeen'\?\)"):
        declare_process(tmp_path, monkeypatch, f"{module}:Fristseen")
    with pytest.raises(declare.DeclarationError, match="process settings: unknown setting 'forget'"):
        declare_process(tmp_path, monkeypatch, processor, process={"processor": processor, "settings": {"forget": 1}})
    with pytest.raises(declare.DeclarationError, match=r"not a subclass of jobs\.processors\.own\.StatefulProcessor"):
        declare_process(tmp_path, monkeypatch, f"{module}:NotOurs")
    with pytest.raises(declare.DeclarationError, match="has no class 'Missing'"):
        declare_process(tmp_path, monkeypatch, f"{module}:Missing")
    with pytest.raises(declare.DeclarationError, match="whose state only RocksDB keeps"):
        declare_process(tmp_path, monkeypatch, processor, spark={"state_store": "hdfs"})
    with pytest.raises(
        declare.DeclarationError, match=r"'nope' is not one of 'rack_status', 'spending_sessions', 'module:Class'"
    ):
        declare_process(tmp_path, monkeypatch, "nope")

    # State of another shape that only Spark finds (an init that needs Spark's handle): refused, named.
    pipeline = declare_process(tmp_path, monkeypatch, processor)
    spark_said = RuntimeError("[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match")
    refusal = str(state_reshaped(spark_said, pipeline))
    assert refusal.startswith(f"processor '{processor}' ({module}.py sha256:") and "rebuild team_process" in refusal

    # Loading it (as a DAG file does) imports the team's module, never Spark.
    declare_process(
        tmp_path, monkeypatch, processor, process={"processor": processor, "settings": {"forget_after": "1 day"}}
    )
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from jobs import declare; declare.load_all(); print(sorted(m for m in sys.modules if m.startswith(('pyspark', 'team_'))))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == str([module])

    # A transform beside the processor whose top level needs Spark (a pandas_udf's type string):
    # where declarations load, with no Spark, the refusal says what to do.
    needs_spark = own_module(
        tmp_path / "pipelines",
        DOCUMENTED + '\nfrom pyspark.sql.functions import pandas_udf\n\n\n@pandas_udf("string")\n'
        "def shout(values):\n    return values.str.upper()\n",
    )
    declare_process(tmp_path, monkeypatch, f"{needs_spark}:FirstSeen")
    refused = subprocess.run(
        [sys.executable, "-c", "from jobs import declare; declare.load_all()"], capture_output=True, text=True
    )
    assert refused.returncode != 0
    assert f"module '{needs_spark}' does not import" in refused.stderr
    assert "give pandas_udf a type object (StringType(), not 'string')" in refused.stderr
