"""A backfill into the production Delta table: a closed range reprocessed under a fixed
declaration, validated, then written over the same dates of the production table in one
commit while the pipeline's runs go on; a reader outside Spark (delta-rs) polling the table
throughout sees the range all old or all new; the rollback writes the range back as it was,
keeping what the runs committed since.

The fix: the production declaration quarantined readings above 60 degrees (a wrong bound);
the fixed one takes them up to 150 (the shipped rack_temperatures). The expected rows come
from a model of the windows written here (each reading in its two sliding windows, per
rack: the average, the maximum, the count), not from the product."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest

from jobs import backfill, declare
from jobs.backfill import REPLACED
from jobs.backfill.replace import refuse_unless_replaceable, replace_range, roll_back
from jobs.backfill.stage import stage_closed_range
from jobs.declare.rules import Rule
from jobs.lake import delta, fs
from jobs.lake.layout import Locations, join
from jobs.quality_report import page as quality_report
from jobs.validate.suite import load_suite
from jobs.validate.validation import validate_table
from tests.helpers import delta_rs_rows, land_in_order, run_closed_range, run_pipeline
from tests.integration.test_delta import reading

DAYS = [datetime(2023, 7, 28 + d, tzinfo=UTC) for d in range(4)] + [datetime(2023, 8, 1, tzinfo=UTC)]
COLUMNS = ["window_start", "window_end", "rack", "avg_temperature", "max_temperature", "readings"]
WINDOW, SLIDE = timedelta(minutes=10), timedelta(minutes=5)


def day_readings(day: datetime) -> list[tuple[str, datetime, float]]:
    """Readings from 01:00 to 21:00 (no window crosses midnight), some above 60 degrees."""
    found = []
    for i in range(40):
        at = day + timedelta(hours=1, minutes=30 * i + 3)
        found.append((f"rack{i % 3}", at, 20.0 + (i % 7) + (50.0 if i % 5 == 0 else 0.0)))
    return found


def model(readings: list[tuple[str, datetime, float]], hottest: float) -> set[tuple]:
    """Each reading's sliding windows, per rack, of the readings the rule lets through."""
    cells: dict[tuple, list[float]] = defaultdict(list)
    for rack, at, temperature in readings:
        if not -50 <= temperature <= hottest:
            continue
        start = datetime.fromtimestamp(at.timestamp() // SLIDE.total_seconds() * SLIDE.total_seconds(), UTC)
        while start + WINDOW > at:
            cells[(start, start + WINDOW, rack)].append(temperature)
            start -= SLIDE
    return {(s, e, rack, sum(t) / len(t), max(t), len(t)) for (s, e, rack), t in cells.items()}


def rows_of(output: str) -> set[tuple]:
    return {
        (s.replace(tzinfo=UTC), e.replace(tzinfo=UTC), rack, avg, top, n)
        for s, e, rack, avg, top, n in delta_rs_rows(output, COLUMNS)
    }


def on(day: datetime, rows: set[tuple]) -> set[tuple]:
    return {row for row in rows if row[0].date() == day.date()}


def land_day(locations: Locations, day: datetime) -> None:
    lines = [reading(rack, at, temperature) for rack, at, temperature in day_readings(day)]
    land_in_order(join(locations.landing, f"dt={day.date()}"), {f"readings-{day.date()}.json": lines})


def request_of(pipeline: declare.PipelineBase, root, backfill_id: str, check_landing: bool = True, **params):
    """A backfill of `pipeline` (as given, not as shipped) under `root`."""
    return backfill.backfill_request(
        {"pipeline": pipeline.name, **params},
        root=str(root),
        allowed_roots=[str(root)],
        backfill_id=backfill_id,
        pipelines={pipeline.name: pipeline},
        check_landing=check_landing,
    )


@pytest.fixture
def shipped():
    return declare.load("rack_temperatures")


@pytest.fixture
def strict(shipped):
    """The production declaration with the wrong bound."""
    wrong = Rule(name="physical_temperature", check="temperature BETWEEN -50 AND 60", on_violation="quarantine")
    return shipped.model_copy(update={"rules": (wrong,)})


def test_a_backfill_replaces_its_dates_in_one_commit_and_the_rollback_keeps_later_runs(
    spark, tmp_path, shipped, strict
):
    root = tmp_path / "root"
    production = Locations.resolve("rack_temperatures", root=str(root))
    for day in DAYS[:4]:
        land_day(production, day)
        assert run_pipeline(spark, strict, production).status == "succeeded"
    before = rows_of(production.output)
    for day in DAYS[:3]:  # the fourth day's last windows wait for the watermark
        assert on(day, before) == model(day_readings(day), hottest=60)

    # The second day, backfilled under the fixed declaration.
    request = request_of(shipped, root, "fix-1", since="2023-07-29", until="2023-07-29")
    assert request.into_table and request.stage == join(request.work_root, "staged")
    refuse_unless_replaceable(shipped, request, production)
    run_closed_range(spark, shipped, request.locations, landing_since=DAYS[1].date(), landing_until=DAYS[1].date())
    stage_closed_range(spark, shipped, request.locations, request.stage)
    staged = Locations.resolve("rack_temperatures", root=request.work_root, output=request.stage)
    assert validate_table(spark, shipped, staged, load_suite(shipped)).status != "failed"

    old, new = on(DAYS[1], before), model(day_readings(DAYS[1]), hottest=150)
    assert old != new
    seen, mixed, stop = [], [], threading.Event()

    def look() -> None:
        rows = on(DAYS[1], rows_of(production.output))
        seen.append("old" if rows == old else "new" if rows == new else "mixed")
        if seen[-1] == "mixed":
            mixed.append(rows)

    def poll() -> None:  # a reader outside Spark, throughout the replacement
        while not stop.is_set():
            look()

    look()
    reader = threading.Thread(target=poll)
    reader.start()
    try:
        done = replace_range(spark, shipped, request, production)
    finally:
        stop.set()
        reader.join()
    look()
    assert mixed == [] and seen[0] == "old" and seen[-1] == "new"
    after = rows_of(production.output)
    assert on(DAYS[1], after) == new
    assert after - on(DAYS[1], after) == before - old  # every other date untouched
    assert (done.rows_written, done.rows_left_out) == (len(new), 0)
    commit_info = [a["commitInfo"] for a in delta.commit(production.output, done.version) if "commitInfo" in a]
    assert commit_info[0]["operation"] == "WRITE" and "fix-1" in commit_info[0]["userMetadata"]
    assert fs.read_json(join(request.work_root, REPLACED))["version"] == done.version

    # The runs go on: a fifth day, under the production declaration as it is.
    land_day(production, DAYS[4])
    assert run_pipeline(spark, strict, production).status == "succeeded"
    with_fifth = rows_of(production.output)
    assert on(DAYS[3], with_fifth) == model(day_readings(DAYS[3]), hottest=60)

    # The rollback: the range as it was, in one commit; the fifth day's run stays.
    undone = roll_back(spark, shipped, request.work_root, "fix-1", production)
    assert undone.version > done.version + 1  # the run's version came between
    assert rows_of(production.output) == (with_fifth - new) | old
    with pytest.raises(backfill.BackfillError, match="rolled back already"):
        roll_back(spark, shipped, request.work_root, "fix-1", production)
    # The data quality report's history of the pipeline shows both commits.
    (listed,) = quality_report.backfills(str(root), "rack_temperatures")
    assert listed["replaced"]["version"] == done.version
    assert listed["replaced"]["rolled_back"]["version"] == undone.version
    page = quality_report.render(str(root))
    assert f"replaced in the table: version {done.version} (rolled back " in page


def test_a_range_the_runs_still_write_windows_of_is_refused(spark, tmp_path, shipped):
    root = tmp_path / "root"
    production = Locations.resolve("rack_temperatures", root=str(root))
    for day in DAYS[:2]:
        land_day(production, day)
    assert run_pipeline(spark, shipped, production).status == "succeeded"
    request = request_of(shipped, root, "too-soon", since="2023-07-29", until="2023-07-29")
    with pytest.raises(backfill.BackfillError, match="not closed in the production table yet"):
        refuse_unless_replaceable(shipped, request, production)


def test_prefixes_name_no_dates_to_replace(tmp_path, shipped):
    with pytest.raises(backfill.BackfillError, match="give a date range"):
        request_of(shipped, tmp_path, "b", check_landing=False, prefixes=["dt=2023-07-29"])
    copy = request_of(
        shipped, tmp_path, "b", check_landing=False, prefixes=["dt=2023-07-29"], publish_to=str(tmp_path / "copy")
    )
    assert not copy.into_table  # a copy is published, as for Parquet


def test_an_events_table_s_range_is_replaced_with_the_events_the_fix_lets_through(spark, tmp_path):
    """clickstream_enriched (events, Delta): production quarantined `signup` events (a rule
    missing it); the fixed rule takes them, and the backfill writes the second day again."""
    fixed = declare.load("clickstream_enriched")
    known = "event IN ('click', 'view', 'scroll', 'purchase', 'signup')"
    fixed = fixed.model_copy(update={"rules": (fixed.rules[0].model_copy(update={"check": known}),)})
    production_rules = declare.load("clickstream_enriched")
    root = tmp_path / "root"
    production = Locations.resolve("clickstream_enriched", root=str(root))
    users = {"u1": ("DE", "free"), "u2": ("FR", "pro")}
    (root / "dimensions").mkdir(parents=True)
    (root / "dimensions" / "users.csv").write_text(
        "user_id,country,plan\n" + "".join(f"{u},{c},{p}\n" for u, (c, p) in users.items())
    )
    days = {}
    for day in DAYS[:3]:
        days[day] = [
            (
                f"{day.date()}-{i}",
                f"u{1 + i % 2}",
                "signup" if i % 4 == 0 else "click",
                day + timedelta(hours=2, minutes=i),
            )
            for i in range(12)
        ]
        lines = [
            json.dumps(
                {"event_id": e, "user_id": u, "event": kind, "eventtimestamp": at.strftime("%Y-%m-%dT%H:%M:%SZ")}
            )
            for e, u, kind, at in days[day]
        ]
        land_in_order(join(production.landing, f"dt={day.date()}"), {f"events-{day.date()}.json": lines})
        assert run_pipeline(spark, production_rules, production).status == "succeeded"

    def expected(day: datetime, kinds: tuple[str, ...]) -> set[tuple]:
        return {(e, u, kind, *users[u]) for e, u, kind, _ in days[day] if kind in kinds}

    def table() -> dict[str, set[tuple]]:
        columns = ["event_id", "user_id", "event", "country", "plan", "event_date"]
        found: dict[str, set[tuple]] = defaultdict(set)
        for *row, date in delta_rs_rows(production.output, columns):
            found[str(date)].add(tuple(row))
        return found

    before = table()
    assert before["2023-07-29"] == expected(DAYS[1], ("click",))
    request = request_of(fixed, root, "fix-events", since="2023-07-29", until="2023-07-29")
    refuse_unless_replaceable(fixed, request, production)  # events: nothing held back, nothing to wait for
    run_closed_range(spark, fixed, request.locations, landing_since=DAYS[1].date(), landing_until=DAYS[1].date())
    stage_closed_range(spark, fixed, request.locations, request.stage)
    done = replace_range(spark, fixed, request, production)

    after = table()
    assert after["2023-07-29"] == expected(DAYS[1], ("click", "signup"))
    assert {d: rows for d, rows in after.items() if d != "2023-07-29"} == {
        d: rows for d, rows in before.items() if d != "2023-07-29"
    }
    assert done.rows_written == 12
    # Killed after its commit, before its record: run again, it finds the commit, writes nothing.
    fs.write_json(join(request.work_root, REPLACED), {"log_was_at": done.version_before})
    versions = delta.versions(production.output)
    assert replace_range(spark, fixed, request, production) == done
    assert delta.versions(production.output) == versions and table() == after
