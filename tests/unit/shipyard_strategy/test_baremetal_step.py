"""deploy_site / update_site's baremetal step on the workflow engine with a fake Drydock: the
spec's three example processings, the report in the step's details, and the action's fate."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.context import RequestContext
from common.errors import BadGateway, BadRequest
from common.workflow import Failed
from shipyard_api.actions.baremetal import baremetal, select_groups
from shipyard_api.strategy.model import parse_strategy, strategy_of
from shipyard_api.strategy.selectors import node_filter
from shipyard_api.workflow.definitions import StepContext
from sitesim.design import SiteEndpoints, design_documents
from sitesim.siteconfig import load_site
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard_strategy.example import ROOT, example_nodes
from tests.unit.shipyard_strategy.fakes import (
    Crash,
    CrashingStrategyDrydock,
    RefusingStrategyDrydock,
    StrategyDrydock,
    UnreadableStrategyDrydock,
)

SITE_FILE = ROOT / "etc" / "sites" / "strategy-example.yaml"


def example_design(**physical: Any) -> list[dict[str, Any]]:
    ends = SiteEndpoints(etcd_endpoints={"kubernetes": ["http://127.0.0.1:2379"]})
    docs = design_documents(load_site(SITE_FILE), ends)
    for doc in docs:
        if doc["schema"] == "shipyard/DeploymentConfiguration/v1":
            doc["data"]["physical_provisioner"].update(physical)
    return docs


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(f"sqlite:///{tmp_path}/shipyard.db")
    h.services.drydock = h.drydock = StrategyDrydock(site=example_nodes())
    yield h
    h.engine_db.dispose()


def run(h: Harness, name: str = "deploy_site", **params: Any) -> tuple[dict[str, Any],
                                                                         dict[str, Any]]:
    if not h.docs.revisions:
        h.commit(example_design())
    action = h.create(name, params)
    view = h.drive(action["id"], rounds=2000)
    return view, h.step(action["id"], "baremetal")


def statuses(step: dict[str, Any]) -> dict[str, str]:
    return {g["name"]: g["status"] for g in step["details"]["groups"]}


def step_context(h: Harness, action_id: str) -> StepContext:
    """The context the engine would give the baremetal step of this action now."""
    steps = h.store.steps(action_id)
    step = next(s for s in steps if s.name == "baremetal")
    return h.engine().context(h.store.get(action_id), step, steps)


def step_state(h: Harness, action_id: str) -> str:
    state: str = h.step(action_id, "baremetal")["step_state"]
    return state


def drydock(h: Harness) -> StrategyDrydock:
    assert isinstance(h.drydock, StrategyDrydock)
    return h.drydock


@pytest.mark.parametrize("name", ["deploy_site", "update_site"])
def test_all_groups_succeed_and_the_action_completes(harness: Harness, name: str) -> None:
    view, step = run(harness, name)
    assert view["state"] == "complete", view
    assert set(statuses(step).values()) == {"succeeded"}
    assert set(step["details"]["nodes"].values()) == {"success"}
    assert len(step["details"]["nodes"]) == 11
    fake = drydock(harness)
    assert sorted(fake.sent("prepare_nodes")) == sorted(n.name for n in example_nodes())
    assert sorted(fake.sent("deploy_nodes")) == sorted(n.name for n in example_nodes())
    # one listing to plan, one for the labels of relabel_nodes; no node filter calls
    assert (fake.listings, fake.filters_resolved) == (2, 0)
    relabel = [s for s in view["steps"] if s["id"] == "relabel_nodes"][0]
    assert relabel["state"] == "success"
    rev = max(harness.docs.revisions)
    assert (rev, "site-action-success", {"dag_id": view["id"]}) in harness.docs.tag_log


def test_ntp_prepare_failure_fails_the_action_after_monitoring_deploys(
        harness: Harness) -> None:
    drydock(harness).fail = {("prepare_nodes", "ntp01")}
    view, step = run(harness)
    assert view["state"] == "failed"
    assert step["state"] == "failed" and step["reason"] == "CriticalGroupFailed"
    assert statuses(step) == {"monitoring-nodes": "succeeded", "ntp-node": "failed",
                              "control-nodes": "failed", "compute-nodes-1": "failed",
                              "compute-nodes-2": "failed"}
    reasons = {g["name"]: g["reason"] for g in step["details"]["groups"]}
    assert reasons["control-nodes"] == "dependency ntp-node failed"
    assert reasons["compute-nodes-2"] == "dependency control-nodes failed"
    fake = drydock(harness)
    assert sorted(fake.sent("deploy_nodes")) == ["monitoring01", "monitoring02", "monitoring03"]
    assert "control01" not in fake.sent("prepare_nodes")
    assert step["details"]["nodes"]["control01"] == "not started"
    relabel = [s for s in view["steps"] if s["id"] == "relabel_nodes"][0]
    assert relabel["state"] == "skipped"
    rev = max(harness.docs.revisions)
    assert (rev, "site-action-failure", {"dag_id": view["id"]}) in harness.docs.tag_log


def test_compute_nodes_2_deploy_failure_still_completes_the_action(harness: Harness) -> None:
    drydock(harness).fail = {("deploy_nodes", "compute03"), ("deploy_nodes", "compute04")}
    view, step = run(harness)
    assert view["state"] == "complete"
    assert statuses(step)["compute-nodes-2"] == "failed"
    assert [s for s, v in statuses(step).items() if v == "failed"] == ["compute-nodes-2"]
    assert step["details"]["nodes"]["compute03"] == "failure"
    assert any("compute-nodes-2" in n["message"] for n in step["notes"])


def test_retired_nodes_are_not_deployed(harness: Harness) -> None:
    drydock(harness).retired = {"compute01"}
    view, step = run(harness)
    assert view["state"] == "complete"
    assert "compute01" not in step["details"]["nodes"]
    assert "compute01" not in drydock(harness).sent("prepare_nodes")


def test_a_drydock_call_past_its_timeout_fails_the_group(harness: Harness) -> None:
    harness.commit(example_design(deploy_timeout=5, deploy_interval=1))
    drydock(harness).hang = {("deploy_nodes", "monitoring02")}
    view, step = run(harness)
    assert view["state"] == "complete"  # monitoring-nodes is not critical
    groups = {g["name"]: g for g in step["details"]["groups"]}
    assert groups["monitoring-nodes"]["status"] == "failed"
    assert "did not finish within 5 s; it was terminated" in groups["monitoring-nodes"]["reason"]
    hung = [t["task_id"] for t in drydock(harness).tasks.values()
            if t["action"] == "deploy_nodes" and "monitoring02" in t["nodes"]]
    assert drydock(harness).terminated == hung
    assert step["details"]["nodes"]["monitoring01"] == "failure"
    assert groups["compute-nodes-1"]["status"] == "succeeded"


def test_an_invalid_strategy_fails_design_validation_with_every_problem(
        harness: Harness) -> None:
    docs = example_design()
    strategy = next(d for d in docs if d["schema"] == "shipyard/DeploymentStrategy/v1")
    strategy["data"]["groups"][0]["depends_on"] = ["compute-nodes-1"]
    strategy["data"]["groups"][1]["depends_on"].append("nowhere")
    harness.commit(docs)
    view, step = run(harness)
    assert view["state"] == "failed" and step["state"] == "skipped"
    check = harness.step(view["id"], "validate_design")
    assert check["state"] == "failed" and check["reason"] == "InvalidDesign"
    messages = [m["message"] for m in check["details"]["messageList"]]
    assert len(messages) == 2
    assert any("circular dependency among groups compute-nodes-1, control-nodes" in m
               for m in messages)
    assert any("'nowhere'" in m for m in messages)
    assert drydock(harness).tasks == {}
    assert not [t for _, t, _ in harness.docs.tag_log if t.startswith("site-action")]


def test_the_baremetal_step_refuses_an_invalid_strategy_itself(harness: Harness) -> None:
    docs = example_design()
    strategy = next(d for d in docs if d["schema"] == "shipyard/DeploymentStrategy/v1")
    strategy["data"]["groups"][0]["depends_on"] = ["compute-nodes-1"]
    harness.commit(docs)
    action = harness.create("deploy_site")
    harness.drive(action["id"], rounds=2000)
    ctx = step_context(harness, action["id"])
    outcome = baremetal(ctx)
    assert isinstance(outcome, Failed) and outcome.reason == "InvalidDeploymentStrategy"
    assert "circular dependency" in str(outcome.details["messageList"])


def test_without_a_strategy_every_node_is_one_critical_group(harness: Harness) -> None:
    docs = [d for d in example_design() if d["schema"] != "shipyard/DeploymentStrategy/v1"]
    config = next(d for d in docs if d["schema"] == "shipyard/DeploymentConfiguration/v1")
    del config["data"]["physical_provisioner"]["deployment_strategy"]
    harness.commit(docs)
    drydock(harness).fail = {("deploy_nodes", "compute02")}
    view, step = run(harness)
    assert view["state"] == "failed"
    [group] = step["details"]["groups"]
    assert group["name"] == "default" and group["critical"] and len(group["nodes"]) == 11
    assert "100% required" in group["reason"]


def test_a_worker_dying_mid_group_is_taken_over_without_a_second_task(
        harness: Harness) -> None:
    harness.services.drydock = harness.drydock = CrashingStrategyDrydock(site=example_nodes())
    harness.commit(example_design())
    action = harness.create("deploy_site")
    first = harness.engine("w1", lease=30)
    with pytest.raises(Crash):
        for _ in range(2000):
            if not first.run_once():
                harness.clock.sleep(1.0)
    assert step_state(harness, action["id"]) == "running"
    harness.clock.sleep(31)
    view = harness.drive(action["id"], harness.engine("w2", lease=30), rounds=2000)
    assert view["state"] == "complete"
    fake = drydock(harness)
    assert sorted(fake.sent("deploy_nodes")) == sorted(n.name for n in example_nodes())
    keys = [c.key for c in fake.calls if c.op == "create:deploy_nodes"]
    assert len(keys) == len(set(keys)) + 1  # the key of the interrupted call, sent twice


def test_drydock_refusing_a_call_fails_that_group_only(harness: Harness) -> None:
    harness.services.drydock = harness.drydock = RefusingStrategyDrydock(
        site=example_nodes(), refuse="deploy_nodes",
        error=BadRequest("Unsupported action deploy_nodes", reason="UnsupportedAction"))
    view, step = run(harness)
    assert view["state"] == "failed"
    groups = {g["name"]: g for g in step["details"]["groups"]}
    assert "Drydock refused deploy_nodes: Unsupported action" in groups["ntp-node"]["reason"]
    assert groups["monitoring-nodes"]["status"] == "failed"
    assert step["details"]["nodes"]["monitoring01"] == "failure"


def test_a_transient_drydock_error_is_retried(harness: Harness) -> None:
    fake = RefusingStrategyDrydock(site=example_nodes(), refuse="prepare_nodes",
                                   error=BadGateway("Drydock answered 502"), once=True)
    harness.services.drydock = harness.drydock = fake
    view, step = run(harness)
    assert view["state"] == "complete" and fake.refused == 1
    assert step["failures"] == 1
    assert len(fake.sent("prepare_nodes")) == 11


def test_task_reads_failing_for_a_while_do_not_fail_the_step(harness: Harness) -> None:
    fake = UnreadableStrategyDrydock(site=example_nodes(), unreadable=5)
    harness.services.drydock = harness.drydock = fake
    view, step = run(harness)
    assert view["state"] == "complete" and step["failures"] == 0
    assert any("unreadable for now" in n["message"] for n in step["notes"])


def test_groups_are_selected_from_one_listing_as_drydocks_node_filter_selects_them() -> None:
    fake = StrategyDrydock(site=example_nodes(), retired={"compute01"})
    strategy = strategy_of(example_design())
    rc = RequestContext(marker="m", user="admin")
    retired, members = select_groups(fake, "ref", strategy, rc)
    assert (fake.listings, fake.filters_resolved) == (1, 0)
    assert retired == ["compute01"]
    assert members == {g.name: [n for n in fake.select_nodes("ref", node_filter(g), ctx=rc)
                                if n != "compute01"] for g in strategy.groups}


def test_a_group_naming_a_node_outside_the_design_is_refused_by_drydock() -> None:
    fake = StrategyDrydock(site=example_nodes())
    strategy = parse_strategy({"groups": [
        {"name": "known", "critical": True, "depends_on": [],
         "selectors": [{"node_names": ["compute01"]}], "success_criteria": {}},
        {"name": "ghost", "critical": True, "depends_on": [],
         "selectors": [{"node_names": ["compute01", "ghost01"]}], "success_criteria": {}}]})
    with pytest.raises(BadRequest) as err:
        select_groups(fake, "ref", strategy, RequestContext(marker="m", user="admin"))
    assert err.value.reason == "UnknownNodes"
    assert fake.filters_resolved == 1  # only the group Drydock alone can answer


def readiness_design(timeout: int) -> list[dict[str, Any]]:
    docs = example_design()
    for doc in docs:
        if doc["schema"] == "shipyard/DeploymentConfiguration/v1":
            doc["data"]["kubernetes"] = {"node_status_interval": 5, "node_status_timeout": timeout}
    return docs


class TurnsReady(dict[str, Any]):
    """Promenade views of nodes whose kubelet is NotReady for the first `reads` reads."""

    def __init__(self, nodes: list[str], reads: int) -> None:
        super().__init__({n: None for n in nodes})
        self.reads = {n: 0 for n in nodes}
        self.limit = reads

    def __getitem__(self, node: str) -> dict[str, Any]:
        self.reads[node] += 1
        ready = "True" if self.reads[node] > self.limit else "False"
        return {"name": node, "kubelet": {"ready": ready, "ready_since": None}}


def test_a_deployed_node_counts_once_its_kubernetes_node_is_ready(harness: Harness) -> None:
    harness.commit(readiness_design(timeout=600))
    harness.promenade.views = views = TurnsReady(["compute03", "compute04"], reads=4)
    view, step = run(harness)
    assert view["state"] == "complete", view
    assert step["details"]["nodes"]["compute04"] == "success"
    assert views.reads == {"compute03": 5, "compute04": 5}  # asked until Ready, no more


def test_a_deployed_node_never_ready_fails_with_the_reason(harness: Harness) -> None:
    harness.commit(readiness_design(timeout=20))
    harness.promenade.views = TurnsReady(["compute04"], reads=10_000)
    view, step = run(harness)
    assert view["state"] == "complete", view  # compute-nodes-2 needs 50 %: compute03 is enough
    assert step["details"]["nodes"]["compute04"] == "failure"
    assert step["details"]["nodes"]["compute03"] == "success"
    assert any("compute04 (not Ready in Kubernetes within 20 s)" in line
               for line in step["details"]["processing"]), step["details"]["processing"]


class Unreachable(TurnsReady):
    """Promenade answering 502 for the first `failures` reads, then the node Ready."""

    def __init__(self, nodes: list[str], failures: int) -> None:
        super().__init__(nodes, reads=failures)

    def __getitem__(self, node: str) -> dict[str, Any]:
        view = super().__getitem__(node)
        if view["kubelet"]["ready"] != "True":
            raise BadGateway("Promenade unreachable")
        return view


def test_promenade_unreachable_while_waiting_for_readiness_is_retried(
        harness: Harness) -> None:
    harness.commit(readiness_design(timeout=600))
    harness.promenade.views = views = Unreachable(["compute04"], failures=2)
    view, step = run(harness)
    assert view["state"] == "complete", view
    assert step["details"]["nodes"]["compute04"] == "success"
    assert views.reads["compute04"] == 3  # two failed reads retried, then Ready
