"""Promenade's Kubernetes client against the real apiserver, as Promenade's ServiceAccount:
where the real API's semantics differ from what a simulator may assume."""

from __future__ import annotations

import pytest

from promenade_api.kube.client import KubeClient, load_api_client

from .conftest import Admin, Promenade

pytestmark = pytest.mark.slow
OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
                  "effect": "NoExecute"}


def test_add_taint_keeps_the_nodes_other_taints(admin: Admin, promenade: Promenade) -> None:
    """Node spec.taints is an atomic list: a strategic merge patch of one taint replaces
    them all, so the operator's taint and the cordon's would be lost."""
    admin.ready_node("pk-t1")
    kube = KubeClient(load_api_client(str(promenade.kubeconfig)), request_timeout=10)
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
