"""The baremetal process of spec 001 on a fake Drydock: the three example processings and the
rules around them (overlaps, prepare failures, timeouts, empty groups, persistence)."""

from __future__ import annotations

import json

from shipyard_api.strategy.model import parse_strategy
from shipyard_api.strategy.progress import Deployment
from tests.unit.shipyard_strategy.example import FakeDrydockRun, plan, trace

ALL_OK = {
    "prepare ntp-node <SUCCESS>", "deploy ntp-node <SUCCESS>",
    "prepare control-nodes <SUCCESS>", "deploy control-nodes <SUCCESS>",
    "prepare monitoring-nodes <SUCCESS>", "deploy monitoring-nodes <SUCCESS>",
    "prepare compute-nodes-2 <SUCCESS>", "deploy compute-nodes-2 <SUCCESS>",
    "prepare compute-nodes-1 <SUCCESS>", "deploy compute-nodes-1 <SUCCESS>",
}


def groups_of(d: Deployment) -> dict[str, tuple[str, str | None]]:
    return {g["name"]: (g["status"], g["reason"]) for g in d.report()["groups"]}


def assert_dependencies_respected(run: FakeDrydockRun) -> None:
    first: dict[str, int] = {}
    for i, call in enumerate(run.calls):
        first.setdefault(call.group, i)
    assert first["ntp-node"] < first["control-nodes"] < first["compute-nodes-1"]
    assert first["control-nodes"] < first["compute-nodes-2"]
    groups = [c.group for c in run.calls]
    assert all(groups.index(g) + groups.count(g) - 1 == max(
        i for i, x in enumerate(groups) if x == g) for g in set(groups)), "groups interleaved"


def test_example_all_groups_succeed() -> None:
    run = FakeDrydockRun()
    d = run.run(plan())
    assert set(trace(d)) == ALL_OK and len(trace(d)) == 10
    assert_dependencies_respected(run)
    assert all(status == "succeeded" for status, _ in groups_of(d).values())
    assert set(d.report()["nodes"].values()) == {"success"}
    assert d.failed_critical() == [] and d.done
    assert [c.phase for c in run.calls] == ["prepare", "deploy"] * 5


def test_example_ntp_prepare_failure_fails_dependents_and_the_action() -> None:
    run = FakeDrydockRun(fail={("prepare", "ntp01")})
    d = run.run(plan())
    assert set(trace(d)) == {
        "prepare ntp-node <FAILED>", "deploy ntp-node <FAILED, due to prepare failure>",
        "prepare control-nodes <FAILED, due to dependency>",
        "deploy control-nodes <FAILED, due to dependency>",
        "prepare monitoring-nodes <SUCCESS>", "deploy monitoring-nodes <SUCCESS>",
        "prepare compute-nodes-2 <FAILED, due to dependency>",
        "deploy compute-nodes-2 <FAILED, due to dependency>",
        "prepare compute-nodes-1 <FAILED, due to dependency>",
        "deploy compute-nodes-1 <FAILED, due to dependency>"}
    groups = groups_of(d)
    assert groups["ntp-node"][0] == "failed" and "at least 1 required" in str(groups["ntp-node"])
    assert groups["control-nodes"] == ("failed", "dependency ntp-node failed")
    assert groups["compute-nodes-1"] == ("failed", "dependency control-nodes failed")
    assert groups["monitoring-nodes"] == ("succeeded", None)
    assert sorted(d.failed_critical()) == ["control-nodes", "ntp-node"]
    nodes = d.report()["nodes"]
    assert nodes["ntp01"] == "failure" and nodes["control01"] == "not started"
    assert nodes["monitoring02"] == "success"
    assert {c.group for c in run.calls} == {"ntp-node", "monitoring-nodes"}
    assert not any(c.phase == "deploy" and c.group == "ntp-node" for c in run.calls)


def test_example_compute_nodes_2_deploy_failure_leaves_the_action_successful() -> None:
    run = FakeDrydockRun(fail={("deploy", "compute03"), ("deploy", "compute04")})
    d = run.run(plan())
    lines = set(trace(d))
    assert lines == (ALL_OK - {"deploy compute-nodes-2 <SUCCESS>"}) | {
        "deploy compute-nodes-2 <FAILED>"}
    groups = groups_of(d)
    assert groups["compute-nodes-2"][0] == "failed"
    assert "0% of nodes successful (0 of 2), 50% required" in str(groups["compute-nodes-2"][1])
    assert groups["compute-nodes-1"] == ("succeeded", None)
    assert d.failed_critical() == []


def test_one_failed_node_of_two_still_meets_fifty_percent() -> None:
    d = FakeDrydockRun(fail={("deploy", "compute03")}).run(plan())
    assert groups_of(d)["compute-nodes-2"] == ("succeeded", None)
    assert d.report()["nodes"]["compute03"] == "failure"


def test_nodes_failing_prepare_are_not_deployed() -> None:
    run = FakeDrydockRun(fail={("prepare", "monitoring02")})
    d = run.run(plan())
    deploy = next(c for c in run.calls if c.group == "monitoring-nodes" and c.phase == "deploy")
    assert deploy.nodes == ("monitoring01", "monitoring03")
    assert groups_of(d)["monitoring-nodes"] == ("succeeded", None)  # no criteria given
    assert d.report()["nodes"]["monitoring02"] == "failure"


def test_a_prepare_failure_missing_the_criteria_skips_the_groups_deploy() -> None:
    run = FakeDrydockRun(fail={("prepare", "control02")})
    d = run.run(plan())
    assert not any(c.group == "control-nodes" and c.phase == "deploy" for c in run.calls)
    status, reason = groups_of(d)["control-nodes"]
    assert status == "failed" and "prepare phase" in str(reason)
    assert "at least 3 required" in str(reason) and "90% required" in str(reason)
    assert d.report()["nodes"]["control01"] == "prepared"
    assert groups_of(d)["compute-nodes-1"] == ("failed", "dependency control-nodes failed")


def test_criteria_missed_after_prepare_skip_the_deploy() -> None:
    data = {"groups": [{"name": "all", "critical": True, "depends_on": [], "selectors": [],
                        "success_criteria": {"minimum_successful_nodes": 11}}]}
    run = FakeDrydockRun(fail={("prepare", "ntp01")})
    d = run.run(plan(parse_strategy(data)))
    assert [c.phase for c in run.calls] == ["prepare"]
    assert "prepare phase: success criteria missed" in str(groups_of(d)["all"][1])
    assert d.report()["nodes"]["control01"] == "prepared"


def test_overlapping_groups_process_a_node_once_and_count_it_in_both() -> None:
    data = {"groups": [
        {"name": "first", "critical": False, "depends_on": [],
         "selectors": [{"node_tags": ["control"]}, {"node_names": ["ntp01"]}],
         "success_criteria": {"minimum_successful_nodes": 4}},
        {"name": "second", "critical": True, "depends_on": ["first"],
         "selectors": [{"rack_names": ["rack03"]}],
         "success_criteria": {"percent_successful_nodes": 100}},
        {"name": "third", "critical": False, "depends_on": [],
         "selectors": [{"node_names": ["ntp01", "compute01"]}],
         "success_criteria": {"maximum_failed_nodes": 0}},
    ]}
    run = FakeDrydockRun(fail={("deploy", "ntp01")})
    d = run.run(plan(parse_strategy(data)))
    sent = [n for c in run.calls for n in c.nodes]
    for node in {*sent} - {"compute01"}:
        assert sent.count(node) == 2, f"{node} sent {sent.count(node)} times"
    assert not [c for c in run.calls if c.group == "second"]
    groups = groups_of(d)
    assert d.report()["nodes"]["monitoring03"] == "not started"
    assert groups["first"][0] == "failed"         # 3 of 4 successful (ntp01 failed deploy)
    assert groups["second"][1] == "dependency first failed"
    assert groups["third"][0] == "failed"         # ntp01 failed in 'first', counted here
    assert "1 node(s) failed, at most 0 allowed" in str(groups["third"][1])
    # ntp01 is not sent again; the failure it brings misses the criteria: no deploy
    assert [(c.phase, c.nodes) for c in run.calls if c.group == "third"] == [
        ("prepare", ("compute01",))]


def test_a_timed_out_call_fails_the_group_and_its_nodes() -> None:
    run = FakeDrydockRun(timeout={("deploy", "monitoring-nodes")})
    d = run.run(plan())
    status, reason = groups_of(d)["monitoring-nodes"]
    assert status == "failed" and "deploy phase: Drydock did not finish" in str(reason)
    assert d.report()["nodes"]["monitoring01"] == "failure"
    assert d.failed_critical() == []


def test_a_group_selecting_no_nodes_is_settled_without_drydock() -> None:
    data = {"groups": [
        {"name": "empty", "critical": False, "depends_on": [],
         "selectors": [{"node_names": ["ghost"]}]},
        {"name": "empty-min", "critical": True, "depends_on": [],
         "selectors": [{"node_tags": ["nothing"]}],
         "success_criteria": {"minimum_successful_nodes": 0}},
        {"name": "after", "critical": False, "depends_on": ["empty"],
         "selectors": [{"node_names": ["ntp01"]}]}]}
    run = FakeDrydockRun()
    d = run.run(plan(parse_strategy(data)))
    groups = groups_of(d)
    assert groups["empty"] == ("succeeded", None)
    assert groups["empty-min"][0] == "failed" and "selects no nodes" in str(groups["empty-min"])
    assert groups["after"] == ("succeeded", None)
    assert [c.group for c in run.calls] == ["after", "after"]
    assert d.failed_critical() == ["empty-min"]


def test_the_report_shows_unprocessed_groups_as_not_started() -> None:
    d = plan()
    call = d.next_call()
    assert call is not None
    report = d.report()
    assert {g["status"] for g in report["groups"]} == {"not_started"}
    current = next(g for g in report["groups"] if g["name"] == call.group)
    assert current["reason"] == "in progress: preparing"
    assert set(report["nodes"].values()) == {"not started"}
    assert report["groups"][0].keys() == {"name", "critical", "status", "reason", "nodes"}


def test_a_deployment_survives_a_json_round_trip_mid_way() -> None:
    run = FakeDrydockRun(fail={("prepare", "ntp01")})
    d = plan()
    call = d.next_call()
    assert call is not None
    d.record(call, call.nodes)
    restored = Deployment.from_dict(json.loads(json.dumps(d.to_dict())))
    finished = run.run(restored)
    reference = FakeDrydockRun(fail={("prepare", "ntp01")}).run(plan())
    assert finished.report() == reference.report()


def test_a_node_deployed_by_an_earlier_group_counts_as_successful_later() -> None:
    data = {"groups": [
        {"name": "a", "critical": False, "depends_on": [],
         "selectors": [{"node_tags": ["control"]}]},
        {"name": "b", "critical": True, "depends_on": ["a"],
         "selectors": [{"rack_names": ["rack03"]}],
         "success_criteria": {"percent_successful_nodes": 100,
                              "minimum_successful_nodes": 4}}]}
    run = FakeDrydockRun()
    d = run.run(plan(parse_strategy(data)))
    assert [(c.group, c.phase, c.nodes) for c in run.calls if c.group == "b"] == [
        ("b", "prepare", ("monitoring03",)), ("b", "deploy", ("monitoring03",))]
    assert groups_of(d)["b"] == ("succeeded", None)
