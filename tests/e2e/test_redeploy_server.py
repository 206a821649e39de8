"""redeploy_server end to end: Shipyard, Promenade and Drydock under gunicorn on sitesim.

The first test runs before any site action tagged a revision (it relies on file order).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.e2e.conftest import create, steps_of
from tests.fixtures.services import Berth, wait_for

pytestmark = pytest.mark.slow


def test_missing_target_revision_fails_in_preflight_and_touches_nothing(berth: Berth) -> None:
    tags = berth.api("GET", f"/revisions/{berth.revision}/tags").json()
    assert not [t for t in tags if t["tag"].startswith("site-action")]
    before = berth.calls(node="node05")
    action = create(berth, "redeploy_server", target_nodes="node05")
    view = berth.wait_action(action["id"])
    steps = steps_of(view)
    assert view["state"] == "failed" and view["reason"] == "MissingPrecondition"
    assert steps["preflight"]["state"] == "failed"
    assert {s["state"] for k, s in steps.items() if k != "preflight"} == {"skipped"}
    assert berth.calls(node="node05") == before


def effects(berth: Berth, node: str) -> dict[str, int]:
    """Counts of the destructive calls the site received for `node`."""
    return {"release": berth.calls(system="maas", op="release", node=node),
            "delete_machine": berth.calls(system="maas", op="delete", node=node),
            "delete_node": berth.calls(system="kube", op="delete_node", node=node)}


def assert_redeployed(berth: Berth, node: str, view: dict[str, Any], before: dict[str, Any],
                      counts: dict[str, int], labels: dict[str, str]) -> dict[str, Any]:
    """Each teardown effect happened exactly once, then the node came back Ready, relabelled."""
    assert view["state"] == "complete", view["message"]
    assert {s["state"] for s in view["steps"]} == {"success"}
    assert effects(berth, node) == {k: v + 1 for k, v in counts.items()}
    seen: dict[str, Any] = berth.sim(f"/nodes/{node}")
    assert seen["power"] == "on" and seen["maas_status"] == "Deployed"
    assert seen["kubernetes"]["present"] and seen["kubernetes"]["ready"]
    assert not seen["kubernetes"]["unschedulable"]
    assert labels.items() <= seen["kubernetes"]["labels"].items()
    assert seen["disks"]["sda"]["marker"] != before["disks"]["sda"]["marker"]  # OS disk wiped
    return seen


CONTROL = {"kubernetes-etcd": "enabled", "kubernetes-apiserver": "enabled",
           "ucp-control-plane": "enabled"}
COMPUTE = {"openstack-compute-node": "enabled"}


def test_redeploy_server_with_wait_tears_down_and_redeploys_node01(
        berth: Berth, successful_revision: int) -> None:
    before = berth.sim("/nodes/node01")
    assert before["kubernetes"]["ready"] and before["etcd"]
    counts = effects(berth, "node01")
    rejoins = berth.calls(system="etcd", op="member_join", node="node01")
    self_adds = berth.calls(system="etcd", op="member_add", node="node01")
    result = berth.cli("create", "action", "redeploy_server", "--param", "target_nodes=node01",
                       "--wait", "--poll", "0.2", "--timeout", "300")
    assert result.exit_code == 0, result.output
    action_id = result.output.split("Action ", 1)[1].split()[0]
    view = berth.api("GET", f"/actions/{action_id}").json()
    assert view["revision_id"] == successful_revision
    seen = assert_redeployed(berth, "node01", view, before, counts, CONTROL)
    assert seen["disks"]["sdb"]["marker"] != before["disks"]["sdb"]["marker"]  # data wiped too
    # Its etcd member was removed (by Promenade) and added back when the node rejoined,
    # while the other members stayed: added by Promenade's join-etcd as a learner (the
    # node's etcd started once listed, never adding itself), promoted to a voter.
    assert berth.calls(system="etcd", op="member_join", node="node01") == rejoins + 1
    assert berth.calls(system="etcd", op="member_add", node="node01") == self_adds
    assert seen["etcd"] == [{"cluster": "kubernetes", "member": "node01"}]
    assert berth.site.etcd is not None
    listed = berth.site.etcd.clusters["kubernetes"].member_list()
    assert sorted(m["name"] for m in listed) == ["node01", "node02", "node03"]
    assert not any(m.get("isLearner") for m in listed)  # every member votes again
    joined = steps_of(view)["join_etcd.node01"]
    assert joined["state"] == "success"
    assert "joined as a learner and was promoted" in json.dumps(joined["details"])
    assert all(berth.sim(f"/nodes/{n}")["etcd"] for n in ("node02", "node03"))
    report = steps_of(view)["decommission.node01"]["details"]["promenade"]
    assert report["code"] == 200
    assert [m["message"] for m in report["details"]["messageList"]
            if m["message"].endswith(": succeeded")] == [
        "drain: succeeded", "clear-labels: succeeded", "agent-locks: succeeded",
        "remove-etcd: succeeded", "etcd-ready: succeeded", "shutdown-kubelet: succeeded"]
    destroy = steps_of(view)["destroy_nodes.node01"]["details"]["task"]
    assert destroy["options"] == {"preserve_local_storage": False}
    assert destroy["request_context"]["context_marker"] == view["context_marker"]


def test_preserve_local_storage_keeps_the_data_disk(berth: Berth,
                                                    successful_revision: int) -> None:
    before = berth.sim("/nodes/node04")
    assert before["disks"]["sdb"]["marker"]
    counts = effects(berth, "node04")
    action = create(berth, "redeploy_server", target_nodes=["node04"],
                    **{"preserve-local-storage": "true"})
    view = berth.wait_action(action["id"], timeout=300)
    seen = assert_redeployed(berth, "node04", view, before, counts, COMPUTE)
    destroy = steps_of(view)["destroy_nodes.node04"]
    assert destroy["details"]["task"]["options"] == {"preserve_local_storage": True}
    assert seen["disks"]["sdb"] == before["disks"]["sdb"]  # data disk marker survived
    assert seen["mounts"]["/var/lib/data"] == {"disk": "sdb",
                                               "by": "cloud-init (existing filesystem)"}
    disks = {d["disk"]: d for d in destroy["details"]["disks"]}  # the step shows each disk
    assert disks["sda"]["result"] == "wiped" and disks["sda"]["method"] == (
        "redfish Drive.SecureErase")
    assert disks["sda"]["verified_by"].startswith("BMC task ") and disks["sda"]["at"]
    assert disks["sdb"]["result"] == "kept"


def test_preserve_local_storage_on_an_ipmi_only_node_is_refused_untouched(
        berth: Berth, successful_revision: int) -> None:
    before, counts = berth.sim("/nodes/node06"), effects(berth, "node06")
    resp = berth.api("POST", "/actions", json={"name": "redeploy_server", "parameters": {
        "target_nodes": ["node06"], "preserve-local-storage": "true"}})
    assert resp.status_code == 400, resp.text
    text = " ".join(m["message"] for m in resp.json()["details"]["messageList"])
    assert "node06" in text and "OS disk sda alone" in text and "(ipmi)" in text
    after = berth.sim("/nodes/node06")
    assert after["disks"] == before["disks"] and after["maas_status"] == "Deployed"
    assert after["kubernetes"]["ready"] and not after["kubernetes"]["unschedulable"]
    assert effects(berth, "node06") == counts
    assert [a for a in berth.api("GET", "/actions").json()
            if "node06" in (a.get("parameters") or {}).get("target_nodes", [])] == []


def test_killed_worker_is_replaced_and_no_destructive_call_is_repeated(
        berth: Berth, successful_revision: int, faults: Any) -> None:
    before = berth.sim("/nodes/node05")
    counts = effects(berth, "node05")
    faults("node05", "maas.release")  # Drydock's destroy hangs in MAAS release
    action = create(berth, "redeploy_server", target_nodes="node05")
    wait_for(lambda: any("created" in n["message"] for n in berth.api(
        "GET", f"/actions/{action['id']}/steps/destroy_nodes.node05").json()["notes"]),
        180, "Shipyard following the destroy task")
    berth.worker.kill()  # SIGKILL: no chance to release the lease
    berth.worker.start()
    faults.clear()
    view = berth.wait_action(action["id"], timeout=300)
    steps = steps_of(view)
    assert_redeployed(berth, "node05", view, before, counts, COMPUTE)  # each effect once
    assert steps["decommission.node05"]["attempts"] == 1
    assert steps["destroy_nodes.node05"]["attempts"] >= 2  # polled by both workers
    created = [n for n in steps["destroy_nodes.node05"]["notes"] if "created" in n["message"]]
    assert len(created) == 1


def test_worker_killed_during_decommission_resumes_it(berth: Berth, successful_revision: int,
                                                      faults: Any) -> None:
    before = berth.sim("/nodes/node06")
    counts = effects(berth, "node06")
    faults("node06", "kube.kubelet_shutdown")  # decommission hangs in its last phase
    action = create(berth, "redeploy_server", target_nodes="node06")
    berth.wait_drain(action["id"], "node06")
    time.sleep(0.5)
    berth.worker.kill()
    berth.worker.start()
    time.sleep(4)  # the new worker takes the action over once the lease (3 s) expires
    faults.clear()
    view = berth.wait_action(action["id"], timeout=300)
    assert_redeployed(berth, "node06", view, before, counts, COMPUTE)
    # resumed with the same key: asked again (409 RequestInProgress) while the first one ran
    assert steps_of(view)["decommission.node06"]["attempts"] >= 2


def test_paused_action_waits_and_unpause_runs_it(berth: Berth,
                                                successful_revision: int) -> None:
    berth.worker.stop()  # queue and pause the action before any worker can claim it
    try:
        touched = berth.calls(node="node02")
        action = create(berth, "relabel_nodes", target_nodes="node02")
        paused = berth.cli("-o", "json", "pause", f"action/{action['id']}")
        assert paused.exit_code == 0 and json.loads(paused.output)["state"] == "paused"
    finally:
        berth.worker.start()
    time.sleep(1.5)  # a running worker must leave a paused action alone
    view = berth.api("GET", f"/actions/{action['id']}").json()
    assert view["state"] == "paused" and {s["step_state"] for s in view["steps"]} == {"pending"}
    assert berth.calls(node="node02") == touched
    assert berth.cli("unpause", f"action/{action['id']}").exit_code == 0
    view = berth.wait_action(action["id"])
    assert view["state"] == "complete", view["message"]
    put = steps_of(view)["relabel_nodes"]["details"]["labels"]  # put on Promenade directly
    assert list(put) == ["node02"] and put["node02"].get("kubernetes-etcd") == "enabled"
    labels = berth.sim("/nodes/node02")["kubernetes"]["labels"]
    assert labels.get("kubernetes-etcd") == "enabled"
    assert [a["command"] for a in view["command_audit"]] == ["create", "pause", "unpause"]


def test_stop_before_any_step_runs_touches_nothing(berth: Berth,
                                                   successful_revision: int) -> None:
    berth.worker.stop()  # nobody runs actions while we queue and stop one
    try:
        touched = berth.calls(node="node02")
        action = create(berth, "relabel_nodes", target_nodes="node02")
        stopped = berth.cli("-o", "json", "stop", f"action/{action['id']}")
        assert json.loads(stopped.output)["state"] == "stopping"
    finally:
        berth.worker.start()
    view = berth.wait_action(action["id"])
    assert view["state"] == "stopped"
    assert {s["state"] for s in view["steps"]} == {"skipped"}
    assert berth.calls(node="node02") == touched
