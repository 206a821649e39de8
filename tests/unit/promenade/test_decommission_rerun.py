"""A decommission run again after Promenade died in its last phase (the kubelet shutdown): the
node carries the kubelet-shutdown label of that earlier run, so drain and clear-labels (which
would take the label away and strand the kubelet-shutdown pod) are not run again, and a node
NotReady because of it is not refused as a failed node."""

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


def stop_kubelet(kube, node: str) -> None:
    kube.nodes[node] = replace(kube.nodes[node], ready="Unknown")


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
        "drain", "clear-labels", "agent-locks"]
    assert "shutdown-kubelet: skipped: the kubelet of node02 is already stopped " \
        "(Ready=Unknown)" in text
    assert "remove-etcd: succeeded" in text and "etcd-ready: succeeded" in text
    assert kube.evictions == [] and etcd.removed == ["node02"]


def test_a_rerun_while_the_kubelet_still_stops_keeps_the_label_and_waits_for_it(
        svc, kube, etcd, clock):
    labels = {**kube.nodes["node04"].labels, DECOMMISSION_LABEL: "enabled"}
    kube.nodes["node04"] = replace(kube.nodes["node04"], unschedulable=True, labels=labels)
    kube.add_pod("shutdown-x", "node04", owner=("DaemonSet", "ds"),
                 labels={"application": "kubelet-shutdown"})  # stops the kubelet a bit later
    clock.at(3, lambda: stop_kubelet(kube, "node04"))
    messages = decommission(svc, "node04", clusters(), DecommissionParams())
    text = [m["message"] for m in messages]
    assert "clear-labels: skipped: an earlier decommission of node04 got past it " \
        f"({DECOMMISSION_LABEL}=enabled)" in text
    assert "shutdown-kubelet: succeeded" in text
    assert kube.nodes["node04"].labels.get(DECOMMISSION_LABEL) == "enabled"
    assert kube.evictions == []


def test_a_not_ready_node_without_the_kubelet_shutdown_label_is_still_refused(svc, kube, etcd):
    kubelet_stopped(kube, "node02", by_decommission=False)
    with pytest.raises(NodeNotReady):
        decommission(svc, "node02", clusters(), DecommissionParams())
    assert etcd.removed == []
