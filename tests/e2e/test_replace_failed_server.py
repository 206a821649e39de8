"""Replacing failed servers end to end: dead, half-dead and half-torn-down nodes.

Real gunicorn services on the simulated site; nodes are killed the way they die in a data
centre (power cut through the BMC, BMC process killed, node object deleted, peer restarted).
"""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Any

import pytest
import requests

from tests.e2e.conftest import create, steps_of
from tests.e2e.test_redeploy_server import COMPUTE, CONTROL, effects
from tests.fixtures.services import Berth, wait_for

pytestmark = pytest.mark.slow


def set_power(berth: Berth, node: str, power: str) -> None:
    resp = requests.put(f"{berth.site.urls['sitesim']}/nodes/{node}/power",
                        json={"power": power}, timeout=10)
    assert resp.status_code == 200, resp.text


def set_bmc(berth: Berth, node: str, running: bool) -> None:
    resp = requests.put(f"{berth.site.urls['sitesim']}/nodes/{node}/bmc",
                        json={"running": running}, timeout=30)
    assert resp.status_code == 200, resp.text


def ipmitool(berth: Berth, node: str, *args: str) -> subprocess.CompletedProcess[str]:
    spec = berth.site.spec.node(node)
    return subprocess.run(["ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p",
                           str(berth.site.ipmi_ports[node]), "-U", spec.bmc.user, "-P",
                           spec.bmc.password, *args], capture_output=True, text=True,
                          timeout=60)


def redeploy(berth: Berth, node: str, timeout: float = 300) -> dict[str, Any]:
    action = create(berth, "redeploy_server", target_nodes=node)
    return berth.wait_action(action["id"], timeout=timeout)


def assert_back_in_service(berth: Berth, node: str, view: dict[str, Any],
                           labels: dict[str, str]) -> dict[str, Any]:
    assert view["state"] == "complete", view["message"]
    seen: dict[str, Any] = berth.sim(f"/nodes/{node}")
    assert seen["power"] == "on" and seen["maas_status"] == "Deployed"
    assert seen["kubernetes"]["ready"] and not seen["kubernetes"]["unschedulable"]
    assert labels.items() <= seen["kubernetes"]["labels"].items()
    return seen


def path_of(view: dict[str, Any], node: str) -> str:
    return str(steps_of(view)[f"assess_node.{node}"]["details"]["path"])


class QuorumWatch:
    """Samples the etcd cluster's health while an action runs; records any loss of quorum."""

    def __init__(self, berth: Berth, cluster: str = "kubernetes") -> None:
        assert berth.site.etcd is not None
        self.cluster = berth.site.etcd.clusters[cluster]
        self.samples: list[tuple[int, int]] = []  # (healthy, members)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            names = self.cluster.member_names()
            healthy = sum(1 for n in names if self.cluster.healthy(n, timeout=0.5))
            self.samples.append((healthy, len(names)))
            self._stop.wait(0.2)

    def __enter__(self) -> QuorumWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def lost(self) -> list[tuple[int, int]]:
        return [(h, n) for h, n in self.samples if h < n // 2 + 1]


def pods_on(berth: Berth, node: str) -> dict[str, dict[str, Any]]:
    """The pods the real apiserver has bound to `node`, by namespace/name."""
    assert berth.site.kube is not None
    found = berth.site.kube.api.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p
            for p in (found or {}).get("items", [])}


def taints_of(berth: Berth, node: str) -> set[str]:
    assert berth.site.kube is not None
    found = berth.site.kube.api.get(f"/api/v1/nodes/{node}") or {}
    return {t["key"] for t in found.get("spec", {}).get("taints") or []}


def test_compute_node_powered_off_with_ipmitool_is_fenced_and_redeployed(
        berth: Berth, successful_revision: int) -> None:
    counts = effects(berth, "node06")
    web = {k for k in pods_on(berth, "node06") if k.startswith("demo/web-")}
    assert ipmitool(berth, "node06", "power", "off").returncode == 0
    # The real node-lifecycle controller notices the silence and taints the node.
    wait_for(lambda: "node.kubernetes.io/unreachable" in taints_of(berth, "node06"), 90,
             "node06 to turn Unknown and be tainted unreachable")
    assert not berth.sim("/nodes/node06")["kubernetes"]["ready"]
    view = redeploy(berth, "node06")
    assert_back_in_service(berth, "node06", view, COMPUTE)
    assert path_of(view, "node06") == "fence-first"
    # The pods of the dead node were force-deleted by the pod garbage collector once the
    # out-of-service taint was on, and the scheduler ran the web replicas elsewhere.
    assert not web & set(pods_on(berth, "node06"))
    assert berth.site.kube is not None
    replicas = berth.site.kube.api.get("/apis/apps/v1/namespaces/demo/deployments/web") or {}
    assert replicas.get("status", {}).get("readyReplicas") == 3
    steps = steps_of(view)
    assert steps["fence_node.node06"]["details"]["task"]["action"] == "power_off_nodes"
    report = steps["decommission.node06"]["details"]["promenade"]["details"]["messageList"]
    assert [m["message"] for m in report][0] == "fence: succeeded"
    assert effects(berth, "node06") == {k: v + 1 for k, v in counts.items()}


def test_control_plane_node_powered_off_keeps_etcd_quorum_throughout(
        berth: Berth, successful_revision: int) -> None:
    set_power(berth, "node02", "off")  # its etcd member dies with it
    wait_for(lambda: not berth.sim("/nodes/node02")["kubernetes"]["ready"], 90,
             "node02 to turn NotReady")
    with QuorumWatch(berth) as watch:
        view = redeploy(berth, "node02")
    seen = assert_back_in_service(berth, "node02", view, CONTROL)
    assert path_of(view, "node02") == "fence-first"
    assert watch.samples and watch.lost() == []
    assert seen["etcd"] == [{"cluster": "kubernetes", "member": "node02"}]  # rejoined
    report = steps_of(view)["decommission.node02"]["details"]["promenade"]
    assert any("counted as lost and removed" in m["message"]
               for m in report["details"]["messageList"])


def test_node_deleted_from_kubernetes_beforehand_is_redeployed(
        berth: Berth, successful_revision: int) -> None:
    assert berth.site.kube is not None
    berth.site.kube.remove_node("node05")
    counts = effects(berth, "node05")
    view = redeploy(berth, "node05")
    assert_back_in_service(berth, "node05", view, COMPUTE)
    assert path_of(view, "node05") == "graceful"
    notes = steps_of(view)["assess_node.node05"]["notes"]
    assert "node05 is not in Kubernetes" in notes[-1]["message"]
    after = effects(berth, "node05")
    assert after["release"] == counts["release"] + 1
    assert after["delete_machine"] == counts["delete_machine"] + 1


def test_bmc_killed_during_teardown_fails_naming_it_and_the_rerun_completes(
        berth: Berth, successful_revision: int, faults: Any) -> None:
    counts = effects(berth, "node03")
    faults("node03", "kube.kubelet_shutdown")  # hold decommission in its last phase
    action = create(berth, "redeploy_server", target_nodes="node03")
    berth.wait_drain(action["id"], "node03")
    set_bmc(berth, "node03", False)  # the ipmi_sim process is killed
    faults.clear()
    try:
        view = berth.wait_action(action["id"], timeout=300)
        assert view["state"] == "failed"
        assert view["message"].startswith("Step destroy_nodes.node03 failed")
        bmc = f"127.0.0.1:{berth.site.ipmi_ports['node03']}"
        assert bmc in view["message"] and "tries" in view["message"]
    finally:
        set_bmc(berth, "node03", True)
    again = redeploy(berth, "node03")
    assert_back_in_service(berth, "node03", again, CONTROL)
    # Every destructive effect happened exactly once over both runs.
    assert effects(berth, "node03") == {k: v + 1 for k, v in counts.items()}


def following(berth: Berth, step_url: str) -> bool:
    """The step created its Drydock task and follows it (by long-poll: mostly running, at
    times waiting)."""
    step = berth.api("GET", step_url).json()
    return step["step_state"] in ("running", "waiting") and any(
        "created" in n["message"] for n in step["notes"])


def test_drydock_stopped_for_ten_seconds_during_destroy_is_ridden_out(
        berth: Berth, successful_revision: int, faults: Any) -> None:
    counts = effects(berth, "node04")
    faults("node04", "maas.release")  # keep the destroy task busy in MAAS
    action = create(berth, "redeploy_server", target_nodes="node04")
    wait_for(lambda: following(berth, f"/actions/{action['id']}/steps/destroy_nodes.node04"),
             180, "Shipyard following the destroy task")
    drydock = berth.procs["drydock"]
    drydock.stop()
    time.sleep(10)
    faults.clear()
    drydock.start()
    view = berth.wait_action(action["id"], timeout=300)
    assert_back_in_service(berth, "node04", view, COMPUTE)
    steps = steps_of(view)
    created = [n for n in steps["destroy_nodes.node04"]["notes"] if "created" in n["message"]]
    assert len(created) == 1  # re-attached to the same task
    assert effects(berth, "node04") == {k: v + 1 for k, v in counts.items()}


def test_not_ready_node_with_an_unreachable_bmc_is_refused_untouched(
        berth: Berth, successful_revision: int) -> None:
    set_power(berth, "node03", "off")
    wait_for(lambda: not berth.sim("/nodes/node03")["kubernetes"]["ready"], 90,
             "node03 to turn NotReady")
    set_bmc(berth, "node03", False)  # its ipmi_sim process is killed
    counts = effects(berth, "node03")
    try:
        view = redeploy(berth, "node03", timeout=120)
        assert view["state"] == "failed" and view["reason"] == "PowerOffUnconfirmed"
        bmc = f"127.0.0.1:{berth.site.ipmi_ports['node03']}"
        assert f"node03: IPMI BMC ipmi {bmc} did not answer" in view["message"]
        assert "nothing was changed" in view["message"]
        assert steps_of(view)["assess_node.node03"]["attempts"] == 1  # no drain was waited for
        assert effects(berth, "node03") == counts
        seen = berth.sim("/nodes/node03")
        assert not seen["kubernetes"]["unschedulable"] and seen["maas_status"] == "Deployed"
        assert seen["etcd"] == [{"cluster": "kubernetes", "member": "node03"}]  # still listed
        assert {s["state"] for k, s in steps_of(view).items()
                if not k.startswith(("preflight", "resolve", "assess"))} == {"skipped"}
    finally:
        set_bmc(berth, "node03", True)
        set_power(berth, "node03", "on")
    wait_for(lambda: berth.sim("/nodes/node03")["kubernetes"]["ready"], 120,
             "node03 to be Ready again")  # as long as the site gives a node to turn Ready


def test_redfish_node_whose_bmc_is_gone_is_refused_at_creation(
        berth: Berth, successful_revision: int) -> None:
    set_bmc(berth, "node04", False)
    counts = effects(berth, "node04")
    try:
        resp = berth.api("POST", "/actions", json={
            "name": "redeploy_server", "parameters": {"target_nodes": ["node04"]}})
        assert resp.status_code == 400, resp.text
        text = resp.text
        assert "node04" in text and "unreachable" in text
        assert effects(berth, "node04") == counts
    finally:
        set_bmc(berth, "node04", True)


def test_stop_during_a_long_drain_cancels_it_and_terminates_the_drydock_task(
        berth: Berth, successful_revision: int, faults: Any) -> None:
    faults("node05", "kube.eviction")  # evicted pods never finish terminating
    faults("node06", "maas.release")  # the destroy task stays busy
    action = create(berth, "redeploy_server", target_nodes=["node05", "node06"])
    url = f"/actions/{action['id']}/steps"
    wait_for(lambda: following(berth, f"{url}/destroy_nodes.node06") and berth.api(
        "GET", f"{url}/decommission.node05").json()["state"] == "running", 180,
        "node06 in destroy while node05 drains")
    task_id = berth.api("GET", f"{url}/destroy_nodes.node06").json()["details"]["task"][
        "task_id"]
    assert berth.cli("stop", f"action/{action['id']}").exit_code == 0
    view = berth.wait_action(action["id"], states=("stopped",), timeout=180)
    steps = steps_of(view)
    decommission = steps["decommission.node05"]
    assert decommission["state"] == "failed" and decommission["reason"] == "Cancelled"
    drydock = requests.get(f"{berth.procs['drydock'].url}/api/v1.0/tasks/{task_id}",
                           headers={"X-Auth-Token": berth.tokens["admin"]}, timeout=10).json()
    wait_for(lambda: requests.get(
        f"{berth.procs['drydock'].url}/api/v1.0/tasks/{task_id}",
        headers={"X-Auth-Token": berth.tokens["admin"]}, timeout=10).json()["status"]
        in ("terminating", "terminated"), 120, "the destroy task to be terminated")
    assert drydock["terminate"] is True
    faults.clear()
    # Both nodes were left half torn down; running the same action again finishes the job.
    for node in ("node05", "node06"):
        assert_back_in_service(berth, node, redeploy(berth, node), COMPUTE)
