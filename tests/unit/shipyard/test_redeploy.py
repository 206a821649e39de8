"""redeploy_server on fake peers: order of effects, parameters, preflight, concurrency."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from common.errors import ValidationFailed
from shipyard_api.workflow.states import StepState
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.design import design

MARKER = "6f1c3d2e-0000-4000-8000-000000000001"


def test_redeploy_runs_every_step_in_order_for_the_target(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    assert [s["id"] for s in view["steps"]] == [
        "preflight", "resolve_design", "assess_node.node01", "take_budget_slot.node01",
        "fence_node.node01", "decommission.node01", "destroy_nodes.node01",
        "remove_from_cluster.node01", "prepare_nodes.node01", "deploy_nodes.node01",
        "wait_boot_actions.node01", "wait_node_ready.node01", "relabel_nodes.node01",
        "join_etcd.node01",
        "release_budget_slot.node01"]
    assert {s["state"] for s in view["steps"]} == {"success"}
    assert harness.promenade.effects == [("decommission", "node01"),
                                         ("remove_from_cluster", "node01"),
                                         ("put_labels", "node01"),
                                         ("join_etcd", "node01")]
    assert harness.promenade.labels == {"node01": {"role": "compute"}}  # the design's
    actions = [t["action"] for t in harness.drydock.tasks.values()]
    assert actions == ["destroy_nodes", "prepare_nodes", "deploy_nodes"]  # bare metal only
    assert all(t["nodes"] == ["node01"] for t in harness.drydock.tasks.values())


def test_every_peer_call_carries_the_action_marker(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": ["node01"]}, marker=MARKER)
    harness.drive(action["id"])
    calls = harness.promenade.calls + harness.drydock.calls
    assert calls and {c.marker for c in calls} == {MARKER}
    assert action["context_marker"] == MARKER


def test_decommission_gets_timeouts_from_deployment_configuration(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    harness.drive(action["id"])
    step = harness.step(action["id"], "decommission.node01")
    assert step["details"]["promenade"]["details"]["timeouts"] == {
        "drain-node-timeout": 30, "drain-node-grace-period": 10, "clear-labels-timeout": 10,
        "remove-etcd-timeout": 10, "etcd-ready-timeout": 10}


@pytest.mark.parametrize(("value", "expected"), [(None, False), ("true", True),
                                                 ("false", False)])
def test_preserve_local_storage_reaches_drydock_destroy(harness: Harness, value: str | None,
                                                        expected: bool) -> None:
    harness.commit(tag="site-action-success")
    params = {"target_nodes": "node01"}
    if value is not None:
        params["preserve-local-storage"] = value
    action = harness.create("redeploy_server", params)
    harness.drive(action["id"])
    destroy = [t for t in harness.drydock.tasks.values() if t["action"] == "destroy_nodes"]
    assert destroy[0]["options"] == {"preserve_local_storage": expected}


def test_wipe_options_reach_drydock_destroy(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.drive(harness.create("redeploy_server", {
        "target_nodes": "node01", "preserve-local-storage": "true",
        "os-disk-erase": "none"})["id"])
    harness.drive(harness.create("redeploy_server", {
        "target_nodes": "node02", "erase": "secure-only"})["id"])
    destroy = [t["options"] for t in harness.drydock.tasks.values()
               if t["action"] == "destroy_nodes"]
    assert destroy == [{"preserve_local_storage": True, "os_disk_erase": "none"},
                       {"preserve_local_storage": False, "erase": "secure_only"}]


def test_the_destroy_step_shows_each_disk_of_the_drydock_result() -> None:
    from shipyard_api.actions.redeploy import disk_report
    task = {"result": {"details": {"messageList": [
        {"message": "node01: Disks: ...", "step": "report_disks", "error": False},
        {"message": "node01: sda wiped", "step": "report_disks", "disk": "sda",
         "result": "wiped", "method": "redfish Drive.SecureErase",
         "verified_by": "BMC task t1: Completed", "at": "2026-11-24T20:00:00+00:00"},
        {"message": "node01: sdb kept", "step": "report_disks", "disk": "sdb",
         "result": "kept", "method": None, "verified_by": None, "at": None}]}}}
    assert disk_report(task) == [
        {"disk": "sda", "result": "wiped", "method": "redfish Drive.SecureErase",
         "verified_by": "BMC task t1: Completed", "at": "2026-11-24T20:00:00+00:00"},
        {"disk": "sdb", "result": "kept", "method": None, "verified_by": None, "at": None}]
    assert disk_report(None) == [] and disk_report({"result": "success"}) == []


def test_wipe_options_are_checked_together(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    with pytest.raises(ValidationFailed) as err:
        harness.create("redeploy_server", {"target_nodes": "node01", "os-disk-erase": "none",
                                           "erase": "paranoid"})
    texts = [m["message"] for m in err.value.messages]
    assert any("os-disk-erase needs preserve-local-storage=true" in t for t in texts)
    assert any("Parameter erase must be one of" in t for t in texts)


def test_a_node_drydock_cannot_wipe_truthfully_is_refused_at_creation(
        harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.drydock.wipe_refusals["node03"] = (
        "Node node03: preserve_local_storage must erase the OS disk sda alone ...")
    with pytest.raises(ValidationFailed) as err:
        harness.create("redeploy_server", {"target_nodes": "node01,node03",
                                           "preserve-local-storage": "true"})
    assert err.value.code == 400 and err.value.instance_reason == "RedeployRefused"
    assert [m["message"] for m in err.value.messages] == [
        "Node node03: preserve_local_storage must erase the OS disk sda alone ..."]
    assert harness.api.list() == [] and harness.drydock.tasks == {}
    assert harness.promenade.calls == []


def test_redeploying_a_retired_node_is_refused_at_creation(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    for node in harness.drydock.node_list:
        if node["hostname"] == "node02":
            node.update(retired=True, retired_reason="failing DIMM")
    with pytest.raises(ValidationFailed) as err:
        harness.create("redeploy_server", {"target_nodes": "node02"})
    [message] = err.value.messages
    assert message["message"].startswith("node02 is retired (failing DIMM)")
    assert harness.api.list() == []


def test_missing_target_revision_fails_in_preflight_and_touches_nothing(
        harness: Harness) -> None:
    harness.commit()  # committed, but never used by a site action
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    assert view["state"] == "failed"
    assert view["reason"] == "MissingPrecondition"
    steps = {s["id"]: s for s in view["steps"]}
    assert steps["preflight"]["state"] == "failed"
    assert all(s["state"] == "skipped" for k, s in steps.items() if k != "preflight")
    assert harness.promenade.calls == [] and harness.drydock.calls == []


def test_target_revision_committed_uses_the_committed_design(harness: Harness) -> None:
    rev = harness.commit()
    action = harness.create("redeploy_server", {"target_nodes": "node02",
                                                "target-revision": "committed"})
    view = harness.drive(action["id"])
    assert view["state"] == "complete"
    assert view["revision_id"] == rev
    task = next(iter(harness.drydock.tasks.values()))
    assert task["design_ref"].endswith(f"/revisions/{rev}/rendered-documents")


def test_unknown_target_nodes_are_refused_naming_each(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    with pytest.raises(ValidationFailed) as err:
        harness.create("redeploy_server", {"target_nodes": "node01,nodeX,nodeY"})
    text = " ".join(m["message"] for m in err.value.messages)
    assert "nodeX" in text and "nodeY" in text and "node01" not in text.split("nodeX")[0]
    assert harness.api.list() == []


def test_bad_parameters_are_all_reported(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    with pytest.raises(ValidationFailed) as err:
        harness.create("redeploy_server", {"preserve-local-storage": "maybe",
                                           "target-revision": "yesterday", "colour": "red"})
    assert len(err.value.messages) == 4  # target_nodes missing, bool, revision, unknown key


def test_failed_decommission_fails_the_node_chain_without_destroying(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.promenade.fail_decommission = {"node01"}
    action = harness.create("redeploy_server", {"target_nodes": "node01,node03"})
    view = harness.drive(action["id"])
    assert view["state"] == "failed"
    assert view["reason"] == "DisassociateStepFailure"
    assert harness.drydock.created("destroy_nodes", "node01") == 0
    assert harness.drydock.created("deploy_nodes", "node03") == 1  # the other node went on


def test_drydock_task_failure_fails_the_step_with_the_task(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.drydock.fail = {("deploy_nodes", "node01")}
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    step = harness.step(action["id"], "deploy_nodes.node01")
    assert view["state"] == "failed" and step["reason"] == "DrydockTaskFailed"
    assert step["details"]["task"]["result"]["failures"] == ["node01"]


def test_wait_ready_polls_until_the_node_is_ready(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.promenade.ready_after = 3
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    harness.drive(action["id"])
    step = harness.step(action["id"], "wait_node_ready.node01")
    assert step["state"] == "success" and step["attempts"] == 3


def _concurrency_harness(harness: Harness, nodes: tuple[str, ...]) -> dict[str, int]:
    """Track how many decommissions run at once, overall and per etcd cluster."""
    lock = threading.Lock()
    running: set[str] = set()
    peak = {"all": 0, "etcd": 0}

    def slow(node: str) -> None:
        with lock:
            running.add(node)
            peak["all"] = max(peak["all"], len(running))
            peak["etcd"] = max(peak["etcd"], len(running & {"node01", "node02"}))
        time.sleep(0.05)
        with lock:
            running.discard(node)

    harness.commit(design(nodes=nodes), tag="site-action-success")
    harness.promenade.on_decommission = slow
    return peak


def test_targets_run_concurrently_but_one_etcd_member_at_a_time(harness: Harness) -> None:
    peak = _concurrency_harness(harness, ("node01", "node02", "node03", "node04"))
    action = harness.create("redeploy_server", {"target_nodes": "node01,node02,node03,node04"})
    engine = harness.engine(executor=lambda n: ThreadPoolExecutor(max_workers=n))
    view = harness.drive(action["id"], engine)
    assert view["state"] == "complete"
    assert peak["etcd"] == 1
    assert peak["all"] >= 2


def test_concurrency_limit_of_one_processes_nodes_one_after_another(harness: Harness) -> None:
    peak = _concurrency_harness(harness, ("node01", "node03", "node04"))
    action = harness.create("redeploy_server", {"target_nodes": "node03,node04"})
    engine = harness.engine(limit=1, executor=lambda n: ThreadPoolExecutor(max_workers=n))
    view = harness.drive(action["id"], engine)
    assert view["state"] == "complete"
    assert peak["all"] == 1
    steps = {s["id"]: s for s in view["steps"]}
    assert steps["relabel_nodes.node03"]["end"] <= steps["decommission.node04"]["start"]


def test_etcd_member_waits_while_another_action_decommissions_its_cluster_peer(
        harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    first = harness.create("redeploy_server", {"target_nodes": "node01"})
    second = harness.create("redeploy_server", {"target_nodes": "node02"})
    release: list[str] = []

    def hold(node: str) -> None:  # node01's decommission is still running elsewhere
        if node == "node02":
            release.append(node)

    harness.promenade.on_decommission = hold
    # Another worker holds the first action, in the middle of decommissioning node01.
    assert harness.store.claim("other", harness.clock(), 1000) == first["id"]
    harness.store.save_step(first["id"], "other", "preflight", StepState.RUNNING)
    harness.store.save_step(first["id"], "other", "preflight", StepState.SUCCESS,
                            output={"revision_id": 1})
    harness.store.save_step(first["id"], "other", "resolve_design", StepState.RUNNING)
    harness.store.save_step(first["id"], "other", "resolve_design", StepState.SUCCESS,
                            output={"etcd": {"node01": ["kubernetes"]}})
    harness.store.save_step(first["id"], "other", "decommission.node01", StepState.RUNNING,
                            memo={"exclusive": ["etcd:kubernetes"]})
    view = harness.drive(second["id"], rounds=20)
    assert harness.step(second["id"], "decommission.node02")["step_state"] == "pending"
    assert view["state"] == "running" and release == []
    harness.store.save_step(first["id"], "other", "decommission.node01", StepState.SUCCESS)
    view = harness.drive(second["id"])
    assert view["state"] == "complete" and release == ["node02"]
