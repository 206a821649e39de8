"""The redeploy bench counts the kubelet-shutdown pod's Kubernetes time and the drained pods'
termination as the site's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.kubepods import KubePods


def pod(uid: str, node: str, *, bound: bool = False, phase: str = "Pending") -> dict[str, Any]:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    spec: dict[str, Any] = {"affinity": affinity, **({"nodeName": node} if bound else {})}
    return {"metadata": {"uid": uid, "name": f"kubelet-shutdown-{uid}",
                         "creationTimestamp": "2026-11-28T01:00:00Z"},
            "spec": spec, "status": {"phase": phase}}


def watcher(tmp_path: Path) -> KubePods:
    config = {"clusters": [{"cluster": {"server": "https://127.0.0.1:1"}}],
              "users": [{"user": {"token": "t"}}]}
    (tmp_path / "kubeconfig").write_text(json.dumps(config))
    return KubePods(str(tmp_path / "kubeconfig"), "node05")


def test_label_to_running_pod_is_the_sites_time(tmp_path: Path) -> None:
    kube = watcher(tmp_path)
    labelled = {"metadata": {"labels": {"promenade-decomission": "enabled"}}}
    kube._on_node({"metadata": {"labels": {}}}, 9.0, "LIST")
    kube._on_node(labelled, 10.0, "MODIFIED")
    kube._on_pod(pod("other", "node04"), 10.01, "ADDED")  # another node's pod: not ours
    kube._on_pod(pod("a", "node05"), 10.02, "ADDED")
    kube._on_pod(pod("a", "node05", bound=True), 10.03, "MODIFIED")
    kube._on_pod(pod("a", "node05", bound=True, phase="Running"), 11.5, "MODIFIED")
    kube._on_pod(pod("a", "node05", bound=True, phase="Succeeded"), 12.0, "MODIFIED")
    # the DaemonSet controller's next pod for the still-labelled node is off the critical path
    kube._on_pod(pod("b", "node05"), 12.1, "ADDED")
    ops = {o["op"]: (o["start"], o["end"]) for o in kube.ops()}
    assert ops == {"daemonset_creates_pod": (10.0, 10.02), "scheduler_binds_pod": (10.02, 10.03),
                   "kubelet_starts_pod": (10.03, 11.5), "shutdown_pod_runs": (11.5, 12.0)}
    assert any("creationTimestamp" in line for line in kube.describe(10.0))


def workload(uid: str, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"uid": uid, "name": f"web-{uid}", "labels": {"app": "web"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-28T01:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": "node05"}, "status": {"phase": "Running"}}


def test_a_drained_pods_termination_is_the_sites_time_until_the_kubelet_shutdown(
        tmp_path: Path) -> None:
    kube = watcher(tmp_path)
    kube._on_node_pod(workload("old", deleting=True), 1.0, "LIST")  # before the action: not ours
    kube._on_node_pod(workload("a"), 2.0, "MODIFIED")  # cordoned, not evicted yet
    kube._on_node_pod(workload("a", deleting=True), 3.0, "MODIFIED")  # evicted: marked
    kube._on_node_pod(workload("a", deleting=True), 3.5, "MODIFIED")
    kube._on_node_pod(workload("a", deleting=True), 7.0, "DELETED")  # the kubelet is done
    kube._on_node_pod(workload("b", deleting=True), 4.0, "MODIFIED")  # still there at the end
    shutdown = {"metadata": {"uid": "k", "name": "kubelet-shutdown-k", "deletionTimestamp": "x",
                             "labels": {"application": "kubelet-shutdown"}}}
    kube._on_node_pod(shutdown, 8.5, "MODIFIED")  # the shutdown pod is counted by ops()
    kube._on_node({"metadata": {"labels": {"promenade-decomission": "enabled"}}}, 8.0,
                  "MODIFIED")
    kube._on_node_pod(workload("late", deleting=True), 9.0, "MODIFIED")  # after the drain:
    kube._on_node_pod(workload("late", deleting=True), 9.5, "DELETED")  # not the drain's
    assert kube.drained() == [
        {"system": "kube", "op": "pod_terminates", "start": 3.0, "end": 7.0}]
