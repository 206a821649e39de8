"""A decommission run again after Promenade died in its last phase (the kubelet shutdown): the
node is NotReady because of that earlier run, so it is not refused as a failed node; only
the etcd phases run again."""

from __future__ import annotations

from dataclasses import replace

import pytest

from promenade_api.decommission import DecommissionParams, decommission
from promenade_api.errors import NodeNotReady
from promenade_api.etcd.design import load_clusters
from promenade_api.kube.labels import DECOMMISSION_LABEL

from .conftest import etcd_doc, kubernetes_cluster


def clusters() -> list:
    return load_clusters([etcd_doc([kubernetes_cluster(2)])])


def kubelet_stopped(kube, node: str, *, by_decommission: bool) -> None:
    labels = dict(kube.nodes[node].labels)
    if by_decommission:
        labels[DECOMMISSION_LABEL] = "enabled"
    kube.nodes[node] = replace(kube.nodes[node], ready="Unknown", unschedulable=True,
                               labels=labels, ready_since="2026-11-27T01:00:00Z")


def test_a_rerun_after_the_kubelet_was_stopped_by_decommission_completes(svc, kube, etcd):
    kubelet_stopped(kube, "node02", by_decommission=True)
    messages = decommission(svc, "node02", clusters(), DecommissionParams())
    text = [m["message"] for m in messages]
    assert [t.split(":")[0] for t in text if "skipped: an earlier decommission" in t] == [
        "drain", "clear-labels", "shutdown-kubelet"]
    assert "remove-etcd: succeeded" in text and "etcd-ready: succeeded" in text
    assert kube.evictions == [] and etcd.removed == ["node02"]


def test_a_not_ready_node_without_the_kubelet_shutdown_label_is_still_refused(svc, kube, etcd):
    kubelet_stopped(kube, "node02", by_decommission=False)
    with pytest.raises(NodeNotReady):
        decommission(svc, "node02", clusters(), DecommissionParams())
    assert etcd.removed == []
