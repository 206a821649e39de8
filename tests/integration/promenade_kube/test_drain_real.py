"""Promenade's drain and node removal on the real control plane, as its own ServiceAccount: the
real Eviction API against PodDisruptionBudget status from the disruption controller, the real
scheduler placing replacements, the DaemonSet controller's pods left alone."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.kube import Admin, wait_for

from .conftest import NS, Promenade

pytestmark = pytest.mark.slow


def deployment(name: str, replicas: int, pool: str) -> dict[str, Any]:
    labels = {"application": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": {"pool": pool}, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": name, "image": "registry.invalid/app:1"}]}}}}


def daemonset(name: str, pool: str) -> dict[str, Any]:
    labels = {"application": name}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": {"pool": pool},
                         "containers": [{"name": name, "image": "registry.invalid/agent:1"}]}}}}


def budget(name: str, min_available: int) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"minAvailable": min_available,
                     "selector": {"matchLabels": {"application": name}}}}


def apply(admin: Admin, obj: dict[str, Any]) -> dict[str, Any]:
    group = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
    plural = {"Deployment": "deployments", "DaemonSet": "daemonsets",
              "PodDisruptionBudget": "poddisruptionbudgets"}[obj["kind"]]
    return admin.create(f"{group}/namespaces/{NS}/{plural}", obj)


def ready_pods(admin: Admin, app: str) -> list[dict[str, Any]]:
    pods = admin.get(f"/api/v1/namespaces/{NS}/pods?labelSelector=application%3D{app}")["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in p.get("status", {}).get("conditions", []))]


def settled_budget(admin: Admin, name: str, healthy: int) -> dict[str, Any]:
    def settled() -> dict[str, Any] | None:
        pdb = admin.get(f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/{name}")
        status = pdb.get("status", {})
        done = (status.get("observedGeneration") == pdb["metadata"]["generation"]
                and status.get("currentHealthy") == healthy)
        return status if done else None

    status: dict[str, Any] = wait_for(f"PDB {name} status from the disruption controller",
                                      settled)
    return status


def test_the_service_account_holds_only_the_shipped_role(admin: Admin,
                                                         promenade: Promenade) -> None:
    token = promenade.sa_token
    assert admin.call("GET", "/api/v1/nodes", token=token).status_code == 200
    assert admin.call("GET", "/api/v1/secrets", token=token).status_code == 403
    assert admin.call("POST", f"/apis/apps/v1/namespaces/{NS}/deployments",
                      deployment("nope", 1, "none"), token=token).status_code == 403
    assert admin.call("DELETE", f"/apis/apps/v1/namespaces/{NS}/daemonsets/x",
                      token=token).status_code == 403


def test_drain_evicts_through_the_pdb_and_the_scheduler_moves_the_pods(
        admin: Admin, promenade: Promenade) -> None:
    admin.ready_node("pk-a1", pool="a")
    admin.ready_node("pk-a2")  # joins the pool once the pods run on pk-a1
    apply(admin, deployment("web", 2, "a"))
    apply(admin, budget("web", 1))
    apply(admin, daemonset("agent", "a"))
    wait_for("2 Ready web pods", lambda: len(ready_pods(admin, "web")) == 2)
    [agent] = wait_for("the agent on pk-a1", lambda: ready_pods(admin, "agent"))
    assert {p["spec"]["nodeName"] for p in ready_pods(admin, "web")} == {"pk-a1"}
    assert settled_budget(admin, "web", 2)["disruptionsAllowed"] == 1
    admin.call("PATCH", "/api/v1/nodes/pk-a2", {"metadata": {"labels": {"pool": "a"}}},
               content_type="application/merge-patch+json").raise_for_status()

    preview = promenade.preview("pk-a1")
    assert preview["drain"]["can_finish"] and preview["blockers"] == [], preview
    assert [s["owner"] for s in preview["drain"]["skipped"]] == ["DaemonSet/agent"]
    assert "pk-a2" in [n["node"] for n in preview["capacity"]["nodes"]]
    assert preview["capacity"]["pending"] == []
    fewest: list[int] = []
    stop = threading.Event()

    def watch_availability() -> None:
        while not stop.is_set():
            fewest.append(len(ready_pods(admin, "web")))
            stop.wait(0.1)

    watcher = threading.Thread(target=watch_availability)
    watcher.start()
    try:
        reply = promenade.post("/nodes/pk-a1/drain", timeout=60, **{"grace-period": 1})
    finally:
        stop.set()
        watcher.join()
    assert reply.status_code == 200, reply.text
    assert min(fewest) >= 1, fewest  # the budget held at every moment
    assert admin.pods_on("pk-a1", "web-") == []
    wait_for("2 web pods Ready on pk-a2", lambda: [
        p["spec"]["nodeName"] for p in ready_pods(admin, "web")] == ["pk-a2", "pk-a2"])
    assert admin.node("pk-a1")["spec"]["unschedulable"] is True
    # The DaemonSet's pod stays, the same pod, and the answer says why.
    [still] = admin.pods_on("pk-a1", "agent-")
    assert still["metadata"]["uid"] == agent["metadata"]["uid"]
    assert f"{NS}/{agent['metadata']['name']}" in reply.text


def test_a_pdb_that_never_allows_an_eviction_blocks_the_drain_and_is_named(
        admin: Admin, promenade: Promenade) -> None:
    admin.ready_node("pk-b1", pool="b")
    apply(admin, deployment("solo", 1, "b"))
    apply(admin, budget("solo", 1))
    [pod] = wait_for("the solo pod Ready", lambda: ready_pods(admin, "solo"))
    assert settled_budget(admin, "solo", 1)["disruptionsAllowed"] == 0
    preview = promenade.preview("pk-b1")
    assert preview["drain"]["blocked_by"] == ["PodDisruptionBudget demo/solo"], preview
    assert not preview["drain"]["can_finish"]

    reply = promenade.post("/nodes/pk-b1/drain", timeout=4, **{"grace-period": 1})
    body = reply.json()
    assert reply.status_code == 500 and body["reason"] == "DrainNodeError", body
    name = pod["metadata"]["name"]
    assert body["details"]["remaining_pods"] == [f"{NS}/{name}"]
    assert any("solo" in m["message"] and "disruption budget" in m["message"]
               and m["error"] for m in body["details"]["messageList"]), body
    [same] = admin.pods_on("pk-b1", "solo-")
    assert same["metadata"]["uid"] == pod["metadata"]["uid"]
    assert admin.node("pk-b1")["spec"]["unschedulable"] is True


def test_remove_from_cluster_deletes_exactly_that_node(admin: Admin,
                                                       promenade: Promenade) -> None:
    admin.ready_node("pk-d1")
    admin.ready_node("pk-d2")
    before = {n["metadata"]["name"] for n in admin.get("/api/v1/nodes")["items"]}
    assert promenade.post("/nodes/pk-d1/drain", timeout=20, **{"grace-period": 1}).ok
    cleared = promenade.post("/nodes/pk-d1/clear-labels", timeout=20)
    assert cleared.status_code == 200, cleared.text
    reply = promenade.post("/nodes/pk-d1/remove-from-cluster")
    assert reply.status_code == 200, reply.text
    after = {n["metadata"]["name"] for n in admin.get("/api/v1/nodes")["items"]}
    assert after == before - {"pk-d1"}
    assert admin.call("GET", "/api/v1/nodes/pk-d1").status_code == 404


def test_a_pod_held_terminating_by_a_finalizer_fails_the_drain_until_released(
        admin: Admin, promenade: Promenade) -> None:
    """kwok deletes an evicted pod at once, but the apiserver keeps it Terminating while a
    finalizer is left: the drain waits for it, names it, and succeeds once it is released."""
    admin.ready_node("pk-e1")
    pod = admin.create(f"/api/v1/namespaces/{NS}/pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pk-e1-held", "finalizers": ["berth.io/test-hold"]},
        "spec": {"nodeName": "pk-e1", "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": "registry.invalid/c:1"}]}})
    wait_for("the held pod Running", lambda: admin.get(
        f"/api/v1/namespaces/{NS}/pods/pk-e1-held")["status"].get("phase") == "Running")

    reply = promenade.post("/nodes/pk-e1/drain", timeout=3, **{"grace-period": 1})
    assert reply.status_code == 500, reply.text
    assert reply.json()["details"]["remaining_pods"] == [f"{NS}/pk-e1-held"]
    held = admin.get(f"/api/v1/namespaces/{NS}/pods/pk-e1-held")
    assert held["metadata"]["uid"] == pod["metadata"]["uid"]
    assert held["metadata"].get("deletionTimestamp")  # evicted, still Terminating

    admin.call("PATCH", f"/api/v1/namespaces/{NS}/pods/pk-e1-held",
               {"metadata": {"finalizers": None}},
               content_type="application/merge-patch+json").raise_for_status()
    again = promenade.post("/nodes/pk-e1/drain", timeout=20, **{"grace-period": 1})
    assert again.status_code == 200, again.text
    assert admin.call("GET", f"/api/v1/namespaces/{NS}/pods/pk-e1-held").status_code == 404
