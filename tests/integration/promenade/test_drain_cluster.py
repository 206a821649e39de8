"""Drain, clear-labels, kubelet shutdown and removal on the real control plane, Promenade as
its ServiceAccount (the PDB-guarded drain itself is in tests/integration/promenade_kube)."""

from __future__ import annotations

import threading
import time
from typing import Any

import falcon.testing
import pytest

from common.health import callable_check
from promenade_api import config
from promenade_api.app import Deps, create_app

from .conftest import Api, KubeSite, wait_for

pytestmark = pytest.mark.slow
GRACE = {"grace-period": "1"}


def deployment(name: str, replicas: int, selector: dict[str, str]) -> dict[str, Any]:
    labels = {"application": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": selector, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": name, "image": "registry.invalid/app:1"}]}}}}


def pdb(name: str, min_available: int, selected: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"minAvailable": min_available,
                     "selector": {"matchLabels": {"application": selected}}}}


def bare_pod(name: str, node: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **metadata},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": "registry.invalid/c:1"}]}}


def running(site: KubeSite, name: str) -> bool:
    pod = site.admin.get(f"/api/v1/namespaces/{site.ns}/pods/{name}")
    return bool((pod.get("status") or {}).get("phase") == "Running")


def test_lock_annotations_block_eviction_until_removed(api: Api, kube_site: KubeSite):
    kube_site.kube.patch_node("node04", annotations={"eviction-lock.berth.io/ceph-osd": ""})
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(api.post(
        "/nodes/node04/drain", params={"timeout": "60", **GRACE})))
    worker.start()
    wait_for(lambda: kube_site.node("node04")["metadata"]["labels"].get(
        "maintenance.berth.io/required") == "true")
    time.sleep(1)
    assert "debug-shell" in kube_site.pods_on("node04")  # nothing evicted while locked
    kube_site.kube.patch_node("node04", annotations={"eviction-lock.berth.io/ceph-osd": None})
    worker.join(timeout=90)
    assert results[0].status_code == 200, results[0].json
    assert "debug-shell" not in kube_site.pods_on("node04")


def test_a_lock_never_released_fails_the_drain_naming_the_lock(api: Api, kube_site: KubeSite):
    kube_site.kube.patch_node("node04", annotations={"eviction-lock.berth.io/nova": ""})
    result = api.post("/nodes/node04/drain", params={"timeout": "1", "grace-period": "0"})
    assert result.status_code == 500 and result.json["reason"] == "DrainNodeError"
    assert result.json["details"]["locks"] == ["eviction-lock.berth.io/nova"]
    assert "debug-shell" in kube_site.pods_on("node04")


CDS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "configureddaemonsets.apps.yaook.cloud"},
    "spec": {"group": "apps.yaook.cloud", "scope": "Namespaced",
             "names": {"plural": "configureddaemonsets", "singular": "configureddaemonset",
                       "kind": "ConfiguredDaemonSet"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                 "openAPIV3Schema": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True}}}]}}


def configured_daemonset(site: KubeSite, name: str) -> dict[str, Any]:
    """A ConfiguredDaemonSet (Yaook's custom resource, its CRD installed): a real owner the
    garbage collector resolves, so the pod it owns stays."""
    site.site.apply([CDS_CRD])
    path = f"/apis/apps.yaook.cloud/v1/namespaces/{site.ns}/configureddaemonsets"
    body = {"apiVersion": "apps.yaook.cloud/v1", "kind": "ConfiguredDaemonSet",
            "metadata": {"name": name}}
    reply = wait_for(lambda: (r := site.admin.call("POST", path, body)).status_code == 201 and r)
    result: dict[str, Any] = reply.json()
    return result


def test_drain_handles_emptydir_unmanaged_daemonset_and_daemonset_like_pods(api, kube_site):
    owner = configured_daemonset(kube_site, "nova-compute")
    kube_site.apply(bare_pod("nova-compute-agent", "node05", ownerReferences=[
        {"apiVersion": "apps.yaook.cloud/v1", "kind": "ConfiguredDaemonSet",
         "name": "nova-compute", "uid": owner["metadata"]["uid"], "controller": True}]))
    wait_for(lambda: running(kube_site, "nova-compute-agent"))
    result = api.post("/nodes/node05/drain", params={"timeout": "60", **GRACE})
    assert result.status_code == 200, result.json
    details = result.json["details"]
    left = kube_site.pods_on("node05")
    assert "scratch-cache" not in left and not [p for p in left if p.startswith("web-")]
    assert "nova-compute-agent" in left and [p for p in left if p.startswith("node-agent-")]
    assert any("scratch-cache" in w and "emptyDir" in w for w in details["warnings"])
    skipped = {s["pod"]: s["reason"] for s in details["skipped"]}
    assert "DaemonSet-like" in skipped[f"{kube_site.ns}/nova-compute-agent"]


def test_drain_removes_unmanaged_pods_and_skips_mirror_pods(api: Api, kube_site: KubeSite):
    result = api.post("/nodes/node04/drain", params={"timeout": "60", **GRACE})
    assert result.status_code == 200, result.json
    assert "debug-shell" not in kube_site.pods_on("node04")
    assert any("debug-shell" in w for w in result.json["details"]["warnings"])
    result = api.post("/nodes/node01/drain", params={"timeout": "60", **GRACE})
    assert result.status_code == 200, result.json
    assert {"kube-apiserver-node01", "kube-scheduler-node01"} <= set(kube_site.pods_on("node01"))
    assert any(s["reason"] == "mirror pod" for s in result.json["details"]["skipped"])


def test_clear_labels_then_shutdown_then_remove_from_cluster(api: Api, kube_site: KubeSite):
    assert api.post("/nodes/node04/remove-from-cluster").status_code == 409
    drained = api.post("/nodes/node04/drain", params={"timeout": "60", **GRACE})
    assert drained.status_code == 200, drained.json
    conflict = api.post("/nodes/node04/remove-from-cluster")
    assert conflict.status_code == 409 and "openstack-compute-node" in str(conflict.json)
    result = api.post("/nodes/node04/clear-labels", params={"timeout": "30"})
    assert result.status_code == 200, result.json
    labels = kube_site.node("node04")["metadata"]["labels"]
    assert labels["maintenance.berth.io/required"] == "true"  # kept for lock holders
    assert "openstack-compute-node" not in labels
    result = api.post("/nodes/node04/shutdown-kubelet", params={"timeout": "60"})
    assert result.status_code == 200, result.json
    assert kube_site.node("node04")["metadata"]["labels"]["promenade-decomission"] == "enabled"
    result = api.post("/nodes/node04/remove-from-cluster")
    assert result.status_code == 200, result.json
    assert api.get("/nodes/node04").status_code == 404
    assert kube_site.admin.call("GET", "/api/v1/nodes/node04").status_code == 404


def test_shutdown_kubelet_times_out_when_the_daemonset_cannot_stop_it(api, kube_site):
    kube_site.site.set_kubelet_shutdown_enabled("node06", False)
    result = api.post("/nodes/node06/shutdown-kubelet", params={"timeout": "3"})
    assert result.status_code == 500 and result.json["reason"] == "ShutdownKubeletError"
    assert kube_site.site.node_summary("node06")["kubelet"] is True


def test_put_node_labels_and_node_view(api: Api, kube_site: KubeSite):
    result = api.client.simulate_put("/api/v1.0/node-labels/node06", headers=api.headers,
                                     json={"openstack-compute-node": "enabled", "rack": "r2"})
    assert result.status_code == 200, result.json
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
    assert not body["details"]["messageList"][0]["error"], body
    assert client.simulate_get("/api/v1.0/health").status_code == 204


def test_a_pod_under_two_pdbs_fails_with_the_api_message(api: Api, kube_site: KubeSite):
    kube_site.kube.patch_node("node04", labels={"pool": kube_site.ns})
    kube_site.apply(deployment("twin", 2, {"pool": kube_site.ns}))
    kube_site.apply(pdb("twin", 0, "twin"))
    kube_site.apply(pdb("twin-again", 0, "twin"))
    wait_for(lambda: len(kube_site.pods_on("node04", "twin-")) == 2)
    result = api.post("/nodes/node04/drain", params={"timeout": "10", **GRACE})
    assert result.status_code == 500 and result.json["reason"] == "DrainNodeError"
    errors = [m["message"] for m in result.json["details"]["messageList"] if m["error"]]
    # kube-apiserver's eviction REST handler answers 500 for a pod under several budgets.
    assert len([e for e in errors if "twin-" in e and
                "more than one PodDisruptionBudget" in e]) == 2, errors


def deny_evictions_in(site: KubeSite) -> str:
    """A ValidatingAdmissionPolicy refusing every eviction in the test's namespace (what an
    admission policy of the site may do); its name, once the apiserver enforces it."""
    name = f"deny-evictions-{site.ns}"
    site.site.apply([
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": name},
         "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [
             {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
              "resources": ["pods/eviction"]}]},
             "validations": [{"expression": "false",
                              "message": "evictions here are refused by policy"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
         "spec": {"policyName": name, "validationActions": ["Deny"],
                  "matchResources": {"namespaceSelector": {"matchLabels": {
                      "kubernetes.io/metadata.name": site.ns}}}}}])
    probe = f"/api/v1/namespaces/{site.ns}/pods/held/eviction?dryRun=All"
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": "held", "namespace": site.ns}}
    wait_for(lambda: "refused by policy" in site.admin.call("POST", probe, body).text)
    return name


def test_an_eviction_refused_by_admission_is_reported_per_pod(api: Api, kube_site: KubeSite):
    kube_site.apply(bare_pod("held", "node04"))
    wait_for(lambda: running(kube_site, "held"))
    policy = deny_evictions_in(kube_site)
    try:
        result = api.post("/nodes/node04/drain", params={"timeout": "10", **GRACE})
    finally:
        for kind in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
            kube_site.admin.call(
                "DELETE", f"/apis/admissionregistration.k8s.io/v1/{kind}/{policy}")
    assert result.status_code == 500 and result.json["reason"] == "DrainNodeError"
    failures = [m["message"] for m in result.json["details"]["messageList"] if m["error"]]
    assert any("held" in f and "refused by policy" in f for f in failures), failures
    assert result.json["details"]["remaining_pods"] == [f"{kube_site.ns}/held"]
    assert "debug-shell" not in kube_site.pods_on("node04")  # the rest was drained
    assert kube_site.node("node04")["spec"]["unschedulable"] is True


def test_drain_falls_back_to_polling_when_the_watch_fails(api, kube_site, monkeypatch):
    listings: list[str] = []
    list_raw = kube_site.kube._list_pods_raw

    def broken_watch(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("watch error: too old resource version")

    def counted(node: str) -> Any:
        listings.append(node)
        return list_raw(node)

    monkeypatch.setattr(kube_site.kube, "_watch_pods", broken_watch)
    monkeypatch.setattr(kube_site.kube, "_list_pods_raw", counted)
    result = api.post("/nodes/node04/drain", params={"timeout": "60", **GRACE})
    assert result.status_code == 200, result.json
    assert len(listings) >= 2
    assert "debug-shell" not in kube_site.pods_on("node04")


def test_clear_labels_waits_for_daemonset_pods_that_no_longer_match(api, kube_site):
    kube_site.apply({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "etcd-agent"},
        "spec": {"selector": {"matchLabels": {"application": "etcd-agent"}},
                 "template": {"metadata": {"labels": {"application": "etcd-agent"}},
                              "spec": {"nodeSelector": {"kubernetes-etcd": "enabled"},
                                       "terminationGracePeriodSeconds": 1,
                                       "containers": [{"name": "a", "image": "busybox"}]}}}})
    wait_for(lambda: kube_site.pods_on("node01", "etcd-agent-"))
    result = api.post("/nodes/node01/clear-labels", params={"timeout": "30"})
    assert result.status_code == 200, result.json
    assert kube_site.pods_on("node01", "etcd-agent-", live=False) == []
    assert "kubernetes-etcd" in result.json["details"]["removed_labels"]
