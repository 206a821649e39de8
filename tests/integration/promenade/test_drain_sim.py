"""Drain, clear-labels, kubelet and removal against the simulated Kubernetes API (real HTTP)."""

from __future__ import annotations

import threading
import time
from typing import Any

import falcon.testing

from common.health import callable_check
from promenade_api import config
from promenade_api.app import Deps, create_app

from .conftest import Api, KubeSite, wait_for


def deployment(name: str, replicas: int, selector: dict[str, str]) -> dict[str, Any]:
    labels = {"application": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "demo", "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": selector,
                         "containers": [{"name": name, "image": "busybox"}]}}}}


def pdb(name: str, min_available: int) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "demo"},
            "spec": {"minAvailable": min_available,
                     "selector": {"matchLabels": {"application": name}}}}


def label(site: KubeSite, node: str, **labels: str) -> None:
    site.kube.patch_node(node, labels=labels)


def test_drain_retries_pdb_refusals_until_the_replacement_is_ready(api: Api, kube_site):
    label(kube_site, "node04", pool="db")
    kube_site.cluster.apply(deployment("db", 2, {"pool": "db"}))
    kube_site.cluster.apply(pdb("db", 1))
    wait_for(lambda: len(kube_site.pods_on("node04", "db-")) == 2)
    label(kube_site, "node05", pool="db")
    result = api.post("/nodes/node04/drain", params={"timeout": "30", "grace-period": "1"})
    assert result.status_code == 200, result.json
    assert kube_site.pods_on("node04", "db-") == []
    assert kube_site.hooks.calls[("eviction", "node04")] > 3  # two pods, db-2 refused first
    wait_for(lambda: len(kube_site.pods_on("node05", "db-")) == 2)
    assert kube_site.node("node04")["spec"]["unschedulable"] is True


def test_drain_that_the_pdb_never_allows_fails_and_leaves_the_node_cordoned(api, kube_site):
    label(kube_site, "node04", pool="solo")
    kube_site.cluster.apply(deployment("solo", 1, {"pool": "solo"}))
    kube_site.cluster.apply(pdb("solo", 1))
    wait_for(lambda: len(kube_site.pods_on("node04", "solo-")) == 1)
    result = api.post("/nodes/node04/drain", params={"timeout": "2", "grace-period": "1"})
    body = result.json
    assert result.status_code == 500 and body["reason"] == "DrainNodeError"
    [pod] = kube_site.pods_on("node04", "solo-")
    assert body["details"]["remaining_pods"] == [f"demo/{pod}"]
    assert any(pod in m["message"] and m["error"] for m in body["details"]["messageList"])
    assert kube_site.node("node04")["spec"]["unschedulable"] is True
    assert "debug-shell" not in kube_site.pods_on("node04")  # the rest was drained


def test_lock_annotations_block_eviction_until_removed(api: Api, kube_site: KubeSite):
    kube_site.kube.patch_node("node04", annotations={"eviction-lock.berth.io/ceph-osd": ""})
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(api.post(
        "/nodes/node04/drain", params={"timeout": "30", "grace-period": "1"})))
    worker.start()
    wait_for(lambda: kube_site.node("node04")["metadata"]["labels"].get(
        "maintenance.berth.io/required") == "true")
    time.sleep(0.5)
    assert "debug-shell" in kube_site.pods_on("node04")  # nothing evicted while locked
    kube_site.kube.patch_node("node04", annotations={"eviction-lock.berth.io/ceph-osd": None})
    worker.join(timeout=30)
    assert results[0].status_code == 200, results[0].json
    assert "debug-shell" not in kube_site.pods_on("node04")


def test_a_lock_never_released_fails_the_drain_naming_the_lock(api: Api, kube_site: KubeSite):
    kube_site.kube.patch_node("node04", annotations={"l2-lock.maintenance.yaook.cloud/nova": ""})
    result = api.post("/nodes/node04/drain", params={"timeout": "1", "grace-period": "0"})
    assert result.status_code == 500 and result.json["reason"] == "DrainNodeError"
    assert result.json["details"]["locks"] == ["l2-lock.maintenance.yaook.cloud/nova"]
    assert "debug-shell" in kube_site.pods_on("node04")


def test_drain_handles_emptydir_unmanaged_daemonset_and_daemonset_like_pods(api, kube_site):
    # The simulator has no custom resources; a Lease stands in for the ConfiguredDaemonSet
    # object so that its garbage collector sees the owner's uid and keeps the pod.
    owner = kube_site.cluster.apply({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "nova-compute", "namespace": "demo"}, "spec": {}})
    kube_site.cluster.apply({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "nova-compute-agent", "namespace": "demo", "ownerReferences": [
            {"apiVersion": "compute.yaook.cloud/v1", "kind": "ConfiguredDaemonSet",
             "name": "nova-compute", "uid": owner["metadata"]["uid"],
             "controller": True}]},
        "spec": {"nodeName": "node05", "containers": [{"name": "a", "image": "busybox"}]}})
    result = api.post("/nodes/node05/drain", params={"timeout": "30", "grace-period": "1"})
    assert result.status_code == 200, result.json
    details = result.json["details"]
    left = kube_site.pods_on("node05")
    assert "scratch-cache" not in left and not [p for p in left if p.startswith("web-")]
    assert "nova-compute-agent" in left and [p for p in left if p.startswith("node-agent-")]
    assert any("scratch-cache" in w and "emptyDir" in w for w in details["warnings"])
    skipped = {s["pod"]: s["reason"] for s in details["skipped"]}
    assert "DaemonSet-like" in skipped["demo/nova-compute-agent"]


def test_drain_removes_unmanaged_pods_and_skips_mirror_pods(api: Api, kube_site: KubeSite):
    result = api.post("/nodes/node04/drain", params={"timeout": "30", "grace-period": "1"})
    assert result.status_code == 200
    assert "debug-shell" not in kube_site.pods_on("node04")
    assert any("debug-shell" in w for w in result.json["details"]["warnings"])
    result = api.post("/nodes/node01/drain", params={"timeout": "30", "grace-period": "1"})
    assert result.status_code == 200
    assert {"kube-apiserver-node01", "kube-scheduler-node01"} <= set(kube_site.pods_on("node01"))
    assert any(s["reason"] == "mirror pod" for s in result.json["details"]["skipped"])


def test_clear_labels_then_shutdown_then_remove_from_cluster(api: Api, kube_site: KubeSite):
    assert api.post("/nodes/node04/remove-from-cluster").status_code == 409
    assert api.post("/nodes/node04/drain", params={"timeout": "30",
                                                   "grace-period": "1"}).status_code == 200
    conflict = api.post("/nodes/node04/remove-from-cluster")
    assert conflict.status_code == 409 and "openstack-compute-node" in str(conflict.json)
    result = api.post("/nodes/node04/clear-labels", params={"timeout": "10"})
    assert result.status_code == 200
    labels = kube_site.node("node04")["metadata"]["labels"]
    assert labels["maintenance.berth.io/required"] == "true"  # kept for lock holders
    assert all("kubernetes.io" in k for k in labels
               if k != "maintenance.berth.io/required"), labels
    result = api.post("/nodes/node04/shutdown-kubelet")
    assert result.status_code == 200, result.json
    assert kube_site.node("node04")["metadata"]["labels"]["promenade-decomission"] == "enabled"
    result = api.post("/nodes/node04/remove-from-cluster")
    assert result.status_code == 200, result.json
    assert api.get("/nodes/node04").status_code == 404


def test_shutdown_kubelet_times_out_when_the_daemonset_cannot_stop_it(api, kube_site):
    kube_site.cluster.set_kubelet_shutdown_enabled("node06", False)
    result = api.post("/nodes/node06/shutdown-kubelet", params={"timeout": "1"})
    assert result.status_code == 500 and result.json["reason"] == "ShutdownKubeletError"


def test_put_node_labels_and_node_view(api: Api, kube_site: KubeSite):
    result = api.client.simulate_put("/api/v1.0/node-labels/node06", headers=api.headers,
                                     json={"openstack-compute-node": "enabled", "rack": "r2"})
    assert result.status_code == 200
    labels = kube_site.node("node06")["metadata"]["labels"]
    assert labels["rack"] == "r2" and labels["kubernetes.io/hostname"] == "node06"
    view = api.get("/nodes/node06").json
    assert view["labels"]["rack"] == "r2" and "DaemonSet" in view["pods"]["by_owner_kind"]


def test_health_extended_reports_the_kubernetes_api(api: Api, kube_site: KubeSite, tmp_path):
    conf_path = tmp_path / "p.conf"
    conf_path.write_text(f"[auth]\nstrategy = token\ntoken_file = {tmp_path}/tokens.yaml\n")
    app = create_app(config.load(str(conf_path)), Deps(
        promenade=api.svc, health_checks=[callable_check("kubernetes", kube_site.kube.ping)]))
    client = falcon.testing.TestClient(app)
    body = client.simulate_get("/api/v1.0/health/extended", headers=api.headers).json
    assert body["details"]["messageList"][0]["name"] == "kubernetes"
    assert client.simulate_get("/api/v1.0/health").status_code == 204


def test_a_pod_under_two_pdbs_fails_with_the_api_message(api: Api, kube_site: KubeSite):
    label(kube_site, "node04", pool="twin")
    kube_site.cluster.apply(deployment("twin", 2, {"pool": "twin"}))
    kube_site.cluster.apply(pdb("twin", 0))
    second = pdb("twin", 0)
    second["metadata"]["name"] = "twin-again"
    kube_site.cluster.apply(second)
    wait_for(lambda: len(kube_site.pods_on("node04", "twin-")) == 2)
    result = api.post("/nodes/node04/drain", params={"timeout": "10", "grace-period": "1"})
    assert result.status_code == 500 and result.json["reason"] == "DrainNodeError"
    errors = [m["message"] for m in result.json["details"]["messageList"] if m["error"]]
    assert len([e for e in errors if "twin-" in e and "more than one" in e]) == 2


def test_an_injected_eviction_failure_is_reported_per_pod(api: Api, kube_site: KubeSite):
    kube_site.hooks.faults[("kube.eviction", "node04")] = "fail"
    result = api.post("/nodes/node04/drain", params={"timeout": "10", "grace-period": "1"})
    assert result.status_code == 500 and result.json["reason"] == "DrainNodeError"
    assert "injected fault" in str(result.json["details"]["messageList"])
    assert kube_site.node("node04")["spec"]["unschedulable"] is True


def test_drain_falls_back_to_polling_when_the_watch_fails(api, kube_site, monkeypatch):
    def broken_watch(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("watch error: too old resource version")

    monkeypatch.setattr(kube_site.kube, "_watch_pods", broken_watch)
    result = api.post("/nodes/node04/drain", params={"timeout": "30", "grace-period": "1"})
    assert result.status_code == 200, result.json
    assert kube_site.hooks.calls[("list_pods", None)] + kube_site.hooks.calls[
        ("list_pods", "node04")] >= 2
    assert "debug-shell" not in kube_site.pods_on("node04")


def test_clear_labels_waits_for_daemonset_pods_that_no_longer_match(api, kube_site):
    kube_site.cluster.apply({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "etcd-agent", "namespace": "kube-system"},
        "spec": {"selector": {"matchLabels": {"application": "etcd-agent"}},
                 "template": {"metadata": {"labels": {"application": "etcd-agent"}},
                              "spec": {"nodeSelector": {"kubernetes-etcd": "enabled"},
                                       "containers": [{"name": "a", "image": "busybox"}]}}}})
    wait_for(lambda: kube_site.pods_on("node01", "etcd-agent-"))
    result = api.post("/nodes/node01/clear-labels", params={"timeout": "10"})
    assert result.status_code == 200, result.json
    assert kube_site.pods_on("node01", "etcd-agent-", live=False) == []
    assert "kubernetes-etcd" in result.json["details"]["removed_labels"]
