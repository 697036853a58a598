"""Backfill params are checked before anything runs; each bad one is refused with its reason."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobs import backfill, declare

PIPELINES = {"clickstream": declare.load("clickstream")}


def request(root: Path, allowed: list[str] | None = None, **params):
    return backfill.backfill_request(
        params,
        root=str(root),
        allowed_roots=allowed or [str(root)],
        backfill_id="20260101T000000Z-abc",
        pipelines=PIPELINES,
        check_landing=False,
    )


def test_a_date_range_plan_isolates_the_work_and_passes_each_value_as_one_argument(tmp_path):
    made = request(tmp_path, pipeline="clickstream", since="2023-07-30", until="2023-07-31")
    assert made.work_root == f"{tmp_path}/backfills/clickstream/20260101T000000Z-abc"
    assert made.publish_to == f"{tmp_path}/published/clickstream"
    assert made.stage == f"{made.publish_to}/versions/20260101T000000Z-abc"
    assert made.locations.landing == f"{tmp_path}/landing/clickstream"
    assert made.locations.checkpoint.startswith(made.work_root) and made.locations.output.startswith(made.work_root)
    assert made.step_args("reprocess") == [
        "backfill",
        "clickstream",
        f"--root={tmp_path}",
        "--id=20260101T000000Z-abc",
        "--since=2023-07-30",
        "--until=2023-07-31",
        f"--publish-to={made.publish_to}",
        "--step=reprocess",
    ]
    assert backfill.BackfillRequest.from_dict(made.to_dict()) == made


def test_a_backfill_s_steps_are_one_order_that_refuses_a_step_not_its_own(tmp_path):
    """The command line runs the steps in this order, the DAG's tasks are them (test_dags), and
    a task's `--step` names one of them."""
    from jobs.backfill.steps import Backfill, Step, StepFailed
    from jobs.cli.parser import build_parser
    from jobs.exit_codes import ExitCode

    made = Backfill.of(request(tmp_path, pipeline="clickstream", since="2023-07-30", until="2023-07-30"))
    assert made.steps == (Step.REPROCESS, Step.VALIDATE, Step.PUBLISH) and made.production is None
    with pytest.raises(StepFailed) as refused:
        made.run(Step.REPLACE)  # a copy is published: no production table's range is replaced
    assert refused.value.code == ExitCode.USAGE
    assert (
        str(refused.value) == "replace is not a step of this backfill: its steps are reprocess -> validate -> publish"
    )
    assert [build_parser().parse_args(made.request.step_args(step)).step for step in Step] == list(Step)
    with pytest.raises(StepFailed) as early:
        made.run(Step.VALIDATE)  # before the reprocess step staged anything: said, no Spark started
    assert early.value.code == ExitCode.REFUSED
    assert str(early.value) == f"{made.request.stage} is not a complete staged result: run the step reprocess first"


def test_a_step_s_arguments_read_back_by_the_command_line_are_the_request_s_params(tmp_path):
    """The command line's flags, the DAG's form and the steps' arguments are one definition
    (jobs/backfill/options.py): what a step passes, the command line reads back whole."""
    from jobs.backfill.options import BACKFILL_OPTIONS as OPTIONS
    from jobs.cli.parser import build_parser

    made = request(
        tmp_path, pipeline="clickstream", prefixes=["dt=2023-07-30", "dt=2023-07-31"], max_files_per_trigger=3
    )
    args = build_parser().parse_args(made.step_args("reprocess"))
    read = {"pipeline": args.pipeline, **{o.name: getattr(args, o.name) for o in OPTIONS}}
    assert {k: v for k, v in read.items() if v is not None} == made.to_params()
    assert {o.name for o in OPTIONS} | {"pipeline"} >= set(made.to_params())


def test_prefixes_become_one_glob_under_the_landing_location(tmp_path):
    made = request(tmp_path, pipeline="clickstream", prefixes=["dt=2023-07-30/hour=10/", "dt=2023-07-31"])
    assert made.landing_glob == "{dt=2023-07-30/hour=10,dt=2023-07-31}"
    assert "--prefix=dt=2023-07-30/hour=10" in made.step_args("reprocess")


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"pipeline": "nope", "since": "2023-07-30", "until": "2023-07-30"}, "not declared"),
        ({"pipeline": "clickstream"}, "say which landed data"),
        ({"pipeline": "clickstream", "since": "2023-07-30"}, "give both since and until"),
        ({"pipeline": "clickstream", "since": "2023-07-31", "until": "2023-07-30"}, "is after"),
        ({"pipeline": "clickstream", "since": "2023-02-30", "until": "2023-03-01"}, "give a date like"),
        ({"pipeline": "clickstream", "since": "30/07/2023", "until": "2023-07-31"}, "give a date like"),
        ({"pipeline": "clickstream", "since": 20230730, "until": "2023-07-31"}, "give a date like"),
        (
            {"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-30", "prefixes": ["dt=2023-07-30"]},
            "not both",
        ),
        ({"pipeline": "clickstream", "prefixes": ["../other/landing"]}, "no globs, no '..'"),
        ({"pipeline": "clickstream", "prefixes": ["/etc"]}, "no globs, no '..'"),
        ({"pipeline": "clickstream", "prefixes": ["dt=2023-07-*"]}, "no globs"),
        ({"pipeline": "clickstream", "prefixes": ["dt=1; rm -rf /"]}, "no globs"),
        ({"pipeline": "clickstream", "prefixes": ["--root=/"]}, "no globs"),
        ({"pipeline": "clickstream", "prefixes": "dt=2023-07-30"}, "a list"),
        (
            {"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-30", "max_files_per_trigger": 0},
            "at least 1",
        ),
        ({"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-30", "shell": "x"}, "unknown param"),
    ],
)
def test_bad_params_are_refused_with_their_reason(tmp_path, params, reason):
    with pytest.raises(backfill.BackfillError) as error:
        request(tmp_path, **params)
    assert reason in str(error.value)


@pytest.mark.parametrize(
    ("publish_to", "reason"),
    [
        ("/etc/published", "inside the root or one of JOBS_PUBLISH_ROOTS"),
        ("{root}", "inside the root or one of JOBS_PUBLISH_ROOTS"),  # the root itself
        ("{root}/tables/clickstream", "overlaps the production location"),
        ("{root}/checkpoints", "overlaps the production location"),
        ("{root}/landing/clickstream/x", "overlaps the production location"),
        ("{root}/backfills/x", "overlaps the production location"),
        ("{root}/../escape", "inside the root or one of JOBS_PUBLISH_ROOTS"),
        ("ftp://host/x", "publish_to"),
    ],
)
def test_the_publish_location_must_be_inside_a_root_and_clear_of_production(tmp_path, publish_to, reason):
    root = tmp_path / "root"
    with pytest.raises(backfill.BackfillError) as error:
        request(
            root,
            pipeline="clickstream",
            since="2023-07-30",
            until="2023-07-30",
            publish_to=publish_to.format(root=root),
        )
    assert reason in str(error.value)


def test_publish_roots_may_be_added_by_configuration(tmp_path, monkeypatch):
    elsewhere = tmp_path / "shared"
    monkeypatch.setenv("JOBS_PUBLISH_ROOTS", f" {elsewhere} ,s3a://lake/published")
    roots = backfill.publish_roots(str(tmp_path / "root"))
    made = request(
        tmp_path / "root",
        roots,
        pipeline="clickstream",
        since="2023-07-30",
        until="2023-07-30",
        publish_to=str(elsewhere / "clickstream"),
    )
    assert made.publish_to == str(elsewhere / "clickstream")
    assert "s3a://lake/published" in roots


def test_a_backfill_id_is_stable_for_a_dag_run_and_safe_as_a_folder_name():
    after = datetime(2026, 11, 22, 4, 0, tzinfo=UTC)
    first = backfill.backfill_id_for("manual__2026-11-22T04:00:00+00:00", after)
    assert first == backfill.backfill_id_for("manual__2026-11-22T04:00:00+00:00", after)
    assert first != backfill.backfill_id_for("manual__2026-11-22T04:00:01+00:00", after)
    assert first.startswith("20261122T040000Z-") and "/" not in first and ":" not in first


def test_a_range_with_no_landed_folders_is_refused(tmp_path):
    (tmp_path / "landing" / "clickstream" / "dt=2023-07-29").mkdir(parents=True)
    with pytest.raises(backfill.BackfillError, match="no landed folders"):
        backfill.backfill_request(
            {"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-31"},
            root=str(tmp_path),
            allowed_roots=[str(tmp_path)],
            backfill_id="b1",
            pipelines=PIPELINES,
        )
    with pytest.raises(backfill.BackfillError, match="no landed data"):
        backfill.backfill_request(
            {"pipeline": "clickstream", "prefixes": ["dt=2023-07-30"]},
            root=str(tmp_path),
            allowed_roots=[str(tmp_path)],
            backfill_id="b1",
            pipelines=PIPELINES,
        )


def test_files_a_date_range_cannot_select_are_warned_about(tmp_path):
    landing = tmp_path / "landing" / "clickstream"
    (landing / "dt=2023-07-30").mkdir(parents=True)
    for name in ("a.json", "b.json", "c.json", "d.json", "_COMPLETE"):
        (landing / name).write_text("{}\n")
    params = {"pipeline": "clickstream", "since": "2023-07-30", "until": "2023-07-30"}
    found = backfill.backfill_request(
        params, root=str(tmp_path), allowed_roots=[str(tmp_path)], backfill_id="b1", pipelines=PIPELINES
    )
    assert found.warnings == (
        f"4 entries under {landing} are outside dt=YYYY-MM-DD folders ('a.json', 'b.json', 'c.json' and 1 more): "
        "a date range never selects them; reprocess them with prefixes, or land files into dt= folders",
    )
    assert backfill.BackfillRequest.from_dict(found.to_dict()) == found  # the request travels as an XCom
    for name in ("a.json", "b.json", "c.json", "d.json"):
        (landing / name).unlink()
    clean = backfill.backfill_request(
        params, root=str(tmp_path), allowed_roots=[str(tmp_path)], backfill_id="b1", pipelines=PIPELINES
    )
    assert clean.warnings == ()


@pytest.mark.parametrize("pipeline", ["spending_sessions", "ad_clicks"])
def test_only_window_and_events_pipelines_can_be_backfilled(tmp_path, pipeline):
    with pytest.raises(backfill.BackfillError, match="backfills cover window and events pipelines") as refused:
        backfill.backfill_request(
            {"pipeline": pipeline, "since": "2023-07-30", "until": "2023-07-30"},
            root=str(tmp_path),
            allowed_roots=[str(tmp_path)],
            backfill_id="20260101T000000Z-abc",
            check_landing=False,
        )
    assert f"`python -m jobs rebuild {pipeline}`" in str(refused.value)  # the command that works
