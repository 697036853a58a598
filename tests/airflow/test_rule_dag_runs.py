"""A `fail` row rule under Airflow (`airflow dags test`): the run task fails at once, with
the rule's line as its failure, and a DAG run with `quarantine_file` gets past it; the task
log and the published run report carry each rule's violations."""

from __future__ import annotations

import pytest

from tests.airflow.dag_runs import arrivals, at, dags_test
from tests.helpers import event, land_in_order

pytestmark = pytest.mark.slow


def test_a_fail_rule_fails_the_run_task_with_its_line_and_the_quarantine_param_gets_past_it(airflow_home, tmp_path):
    root = tmp_path / "root"
    landing = root / "landing" / "clickstream"
    files = arrivals(0, 1)
    files["part-0.json"].append(event("u1", at(1.2), "e-clik", event="clik"))  # known_event: quarantined
    land_in_order(str(landing), {**files, "load.json": [event("u2", at(1.5)), event("loadtest-9", at(1.6))]})

    stopped = dags_test(airflow_home, str(root), "jobs_clickstream")

    assert stopped.state == "failed"
    assert stopped.tasks()["run"] == ("failed", 1)  # exit 5: every retry would stop the same way
    failures = [line for line in stopped.output.splitlines() if "AirflowFailException: python -m jobs run" in line]
    failure = failures[-1]  # the task's own, after the spark-submit hook's (its cause)
    assert "a batch stopped on its data" in failure
    assert f"a record breaks rule 'no_load_test_traffic' (on_violation: fail): {landing}/load.json line 2" in failure

    conf = {"quarantine_file": f"{landing}/load.json", "quarantine_reason": "a load test"}
    passed = dags_test(airflow_home, str(root), "jobs_clickstream", conf)

    assert passed.state == "success", passed.output[-5000:]
    assert "rules: known_event 1 (quarantine), has_event_id 0 (warn), no_load_test_traffic 0 (fail)" in passed.output
    published = passed.xcom("run_report")
    assert published["rules"] == {
        "known_event": {"action": "quarantine", "violations": 1},
        "has_event_id": {"action": "warn", "violations": 0},
        "no_load_test_traffic": {"action": "fail", "violations": 0},
    }
    assert published["quarantined_rows"] == 1 + 2 + 1  # the unusable line, load.json's two, the rule's
