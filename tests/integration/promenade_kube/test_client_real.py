"""Promenade's Kubernetes client against the real apiserver, as Promenade's ServiceAccount:
where the real API's semantics differ from what a simulator may assume."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from promenade_api.kube.client import KubeClient, load_api_client
from promenade_api.kube.model import Lease
from promenade_api.kube.port import KubeApiError, KubeConflict, KubeNotFound
from tests.support.kube import Admin

from .conftest import Promenade

pytestmark = pytest.mark.slow
OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
                  "effect": "NoExecute"}


def test_add_taint_keeps_the_nodes_other_taints(admin: Admin, promenade: Promenade) -> None:
    """Node spec.taints is an atomic list: a strategic merge patch of one taint replaces
    them all, so the operator's taint and the cordon's would be lost."""
    admin.ready_node("pk-t1")
    kube = sa_client(promenade)
    dedicated = {"key": "dedicated", "value": "storage", "effect": "NoSchedule"}
    reply = admin.call("PATCH", "/api/v1/nodes/pk-t1",
                       {"spec": {"unschedulable": True, "taints": [dedicated]}},
                       content_type="application/merge-patch+json")
    assert reply.status_code == 200, reply.text

    kube.add_taint("pk-t1", OUT_OF_SERVICE)
    kube.add_taint("pk-t1", {**OUT_OF_SERVICE, "value": "fenced"})  # same key and effect

    taints = admin.node("pk-t1")["spec"]["taints"]
    by_key = {(t["key"], t["effect"]): t.get("value") for t in taints}
    assert by_key[("dedicated", "NoSchedule")] == "storage"
    assert by_key[(OUT_OF_SERVICE["key"], "NoExecute")] == "fenced"
    assert len(taints) == len(by_key)  # one entry per key and effect


def sa_client(promenade: Promenade) -> KubeClient:
    return KubeClient(load_api_client(str(promenade.kubeconfig)), request_timeout=10,
                      poll_interval=0.1)


def test_leases_in_berths_namespace_serialise_writers(promenade: Promenade) -> None:
    kube = sa_client(promenade)
    namespace = promenade.lease_namespace
    assert kube.get_lease(namespace, "etcd-kubernetes") is None
    first = kube.create_lease(namespace, Lease("etcd-kubernetes", "promenade-a", time.time(), 30))
    with pytest.raises(KubeConflict):  # someone holds it already
        kube.create_lease(namespace, Lease("etcd-kubernetes", "promenade-b", time.time(), 30))
    renewed = kube.update_lease(namespace, replace(first, renewed_at=time.time()))
    with pytest.raises(KubeConflict):  # written since `first` was read
        kube.update_lease(namespace, replace(first, holder="promenade-b"))
    read = kube.get_lease(namespace, "etcd-kubernetes")
    assert read is not None and read.holder == "promenade-a" and read.version == renewed.version
    with pytest.raises(KubeApiError, match="403"):  # its Role grants Leases in Berth's only
        kube.create_lease("kube-system", Lease("etcd-kubernetes", "promenade-a", None, 30))


def test_watches_see_a_node_change_and_pods_leave(admin: Admin, promenade: Promenade) -> None:
    kube = sa_client(promenade)
    admin.ready_node("pk-w1")
    version = kube.get_node("pk-w1").version
    kube.patch_node("pk-w1", labels={"watched": "yes"})
    started = time.monotonic()
    assert kube.watch_node("pk-w1", version, 120.0) is True  # the change after `version`
    assert time.monotonic() - started < 60  # seen, not the watch's end
    pod = admin.create("/api/v1/namespaces/demo/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pk-w1-bare"},
        "spec": {"nodeName": "pk-w1", "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": "registry.invalid/c:1"}]}})
    [listed] = [p for p in kube.list_pods("pk-w1") if p.name == "pk-w1-bare"]
    assert listed.uid == pod["metadata"]["uid"]
    assert kube.delete_pod(listed, 1).outcome == "evicted"
    assert kube.wait_pods_gone("pk-w1", {listed.uid}, 30.0) == set()
    assert kube.delete_pod(listed, 1).outcome == "gone"
    with pytest.raises(KubeNotFound):
        kube.delete_node("pk-w-never-existed")
