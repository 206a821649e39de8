"""Shutdown kubelet (label, then Ready Unknown or the DaemonSet pod done) and node removal."""

from __future__ import annotations

from dataclasses import replace

import pytest

from promenade_api.errors import DeleteNodeError, NodeNotDrained, ShutdownKubeletError
from promenade_api.kube.port import KubeApiError


def stop_kubelet(kube, node):
    kube.nodes[node] = replace(kube.nodes[node], ready="Unknown")


def test_shutdown_labels_the_node_and_waits_for_ready_unknown(svc, kube, clock):
    clock.at(3, lambda: stop_kubelet(kube, "node04"))
    result = svc.shutdown_kubelet("node04")
    assert kube.nodes["node04"].labels["promenade-decomission"] == "enabled"
    assert result["evidence"] == "Ready condition Unknown"


def test_shutdown_accepts_the_daemonset_pod_reporting_done(svc, kube):
    kube.add_pod("shutdown-x", "node04", owner=("DaemonSet", "ds"),
                 labels={"application": "kubelet-shutdown"}, phase="Succeeded")
    assert "completed" in svc.shutdown_kubelet("node04")["evidence"]


def test_shutdown_times_out_with_shutdown_kubelet_error(svc):
    with pytest.raises(ShutdownKubeletError) as err:
        svc.shutdown_kubelet("node04", timeout=5)
    assert err.value.to_status()["reason"] == "ShutdownKubeletError"


def ready_for_removal(kube, node="node04"):
    kube.patch_node(node, labels={"openstack-compute-node": None,
                                  "promenade-decomission": "enabled"}, unschedulable=True)


def test_remove_from_cluster_deletes_a_drained_unlabelled_node(svc, kube):
    ready_for_removal(kube)
    kube.add_pod("ds-pod", "node04", owner=("DaemonSet", "ds"), namespace="kube-system")
    svc.remove_from_cluster("node04")
    assert "node04" not in kube.nodes


def test_remove_from_cluster_accepts_the_maintenance_label_left_by_drain(svc, kube):
    ready_for_removal(kube)
    kube.patch_node("node04", labels={"maintenance.berth.io/required": "true"})
    svc.remove_from_cluster("node04")
    assert "node04" not in kube.nodes


def test_remove_from_cluster_refuses_an_uncordoned_node(svc, kube):
    kube.patch_node("node04", labels={"openstack-compute-node": None})
    with pytest.raises(NodeNotDrained) as err:
        svc.remove_from_cluster("node04")
    assert err.value.code == 409 and "not cordoned" in err.value.messages[0]["message"]
    assert "node04" in kube.nodes


def test_remove_from_cluster_lists_every_problem(svc, kube):
    kube.add_pod("web", "node04")
    with pytest.raises(NodeNotDrained) as err:
        svc.remove_from_cluster("node04")
    texts = " ".join(m["message"] for m in err.value.messages)
    assert "not cordoned" in texts and "default/web" in texts and "openstack-compute-node" \
        in texts


def test_remove_from_cluster_refuses_evictable_pods(svc, kube):
    ready_for_removal(kube)
    kube.add_pod("web", "node04")
    with pytest.raises(NodeNotDrained):
        svc.remove_from_cluster("node04")


def test_remove_from_cluster_api_failure_is_delete_node_error(svc, kube, monkeypatch):
    ready_for_removal(kube)

    def boom(name):
        raise KubeApiError("HTTP 500: etcdserver: request timed out")

    monkeypatch.setattr(kube, "delete_node", boom)
    with pytest.raises(DeleteNodeError) as err:
        svc.remove_from_cluster("node04")
    assert "request timed out" in err.value.messages[0]["message"]
