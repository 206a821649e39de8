"""The site's real control plane (kube-apiserver, controller-manager, scheduler, kwok) behaves as
Kubernetes: kwok nodes turn Ready, the real controllers run Deployments and PDBs, a node kwok
stops heartbeating is marked Unknown and tainted, and DELETE /api/v1/nodes deletes every node.

Skips when the binaries are not built (`make kube`), unless BERTH_KUBE_REQUIRED=1."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from sitesim.kube.controlplane import KWOK_LABEL, ControlPlane, kwok_node
from tests.support import kube as kube_support
from tests.support.kube import Admin, wait_for

pytestmark = pytest.mark.slow
NS = "default"


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    yield from kube_support.control_plane(tmp_path_factory)


@pytest.fixture(scope="module")
def api(control_plane: ControlPlane) -> Admin:
    return Admin(control_plane)


def ready_status(node: dict[str, Any]) -> str | None:
    for condition in node.get("status", {}).get("conditions", []):
        if condition["type"] == "Ready":
            return str(condition["status"])
    return None


def create_ready_node(api: Admin, name: str, **labels: str) -> dict[str, Any]:
    created = api.create("/api/v1/nodes", kwok_node(name, labels))
    assert created["spec"]["providerID"] == f"kwok://{name}"

    def ready() -> dict[str, Any] | None:
        node = api.get(f"/api/v1/nodes/{name}")
        return node if ready_status(node) == "True" else None

    node: dict[str, Any] = wait_for(f"node {name} Ready", ready)
    return node


def test_a_kwok_node_becomes_ready_and_holds_a_lease(api: Admin) -> None:
    node = create_ready_node(api, "rcp-ready")
    assert node["spec"]["providerID"] == "kwok://rcp-ready"
    lease = wait_for("the node's lease", lambda: api.call(
        "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/rcp-ready").ok)
    assert lease
    version = api.get("/version")
    assert version["major"] == "1" and version["minor"].startswith("36"), version


def test_deployment_runs_on_kwok_nodes_and_the_disruption_controller_fills_pdb_status(
        api: Admin) -> None:
    nodes = {create_ready_node(api, n, pool="app")["metadata"]["name"]
             for n in ("rcp-app-1", "rcp-app-2")}
    labels = {"app": "web"}
    api.create(f"/apis/apps/v1/namespaces/{NS}/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {
                     "nodeSelector": {"pool": "app"},
                     "containers": [{"name": "web", "image": "registry.invalid/web:1"}]}}}})
    pdb = api.create(f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}})

    def running() -> list[dict[str, Any]] | None:
        pods = api.get(f"/api/v1/namespaces/{NS}/pods?labelSelector=app%3Dweb")["items"]
        up = [p for p in pods if p["status"].get("phase") == "Running"]
        return up if len(up) == 2 else None

    pods = wait_for("2 Running pods of the Deployment", running)
    placed = {p["spec"]["nodeName"] for p in pods}
    assert placed <= nodes, (placed, nodes)

    def pdb_settled() -> dict[str, Any] | None:
        status = api.get(f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/web")["status"]
        done = (status.get("observedGeneration") == pdb["metadata"]["generation"]
                and status.get("currentHealthy") == 2)
        return status if done else None

    status = wait_for("PDB status from the disruption controller", pdb_settled)
    assert status["disruptionsAllowed"] == 1
    assert status["desiredHealthy"] == 1 and status["expectedPods"] == 2


def test_a_node_kwok_stops_heartbeating_turns_unknown_and_gets_the_unreachable_taint(
        api: Admin, control_plane: ControlPlane) -> None:
    create_ready_node(api, "rcp-silent")
    patched = api.call("PATCH", "/api/v1/nodes/rcp-silent",
                       {"metadata": {"labels": {KWOK_LABEL: "powered-off"}}},
                       content_type="application/merge-patch+json")
    assert patched.status_code == 200, patched.text
    left = time.monotonic()

    def tainted() -> dict[str, Any] | None:
        node = api.get("/api/v1/nodes/rcp-silent")
        effects = {t["effect"] for t in node["spec"].get("taints", [])
                   if t["key"] == "node.kubernetes.io/unreachable"}
        return node if effects == {"NoSchedule", "NoExecute"} else None

    grace = control_plane.timings.node_monitor_grace_period_s
    node = wait_for("the unreachable NoSchedule and NoExecute taints", tainted,
                    timeout=grace + 45)
    assert ready_status(node) == "Unknown"
    assert time.monotonic() - left >= grace - control_plane.timings.node_lease_duration_s / 4
    # The nodes kwok still runs kept their heartbeat meanwhile.
    others = {n["metadata"]["name"]: ready_status(n) for n in api.get("/api/v1/nodes")["items"]}
    assert {name: ready for name, ready in others.items() if name != "rcp-silent"} == {
        "rcp-ready": "True", "rcp-app-1": "True", "rcp-app-2": "True"}


def test_delete_on_the_nodes_collection_deletes_every_node(api: Admin) -> None:
    """Runs last in this module: it empties the shared cluster of nodes."""
    for name in ("rcp-doomed-1", "rcp-doomed-2"):
        api.create("/api/v1/nodes", kwok_node(name))
    before = {n["metadata"]["name"] for n in api.get("/api/v1/nodes")["items"]}
    assert {"rcp-doomed-1", "rcp-doomed-2"} <= before and len(before) > 2

    reply = api.call("DELETE", "/api/v1/nodes/")
    assert reply.status_code == 200, reply.text
    wait_for("every node gone", lambda: api.get("/api/v1/nodes")["items"] == [], timeout=30)
