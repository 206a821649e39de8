"""The demo site's workloads as manifests: what a drain has to deal with on the real cluster.

They are created through the API and run by the real controllers: the DaemonSets by the
DaemonSet controller, the web Deployment by the Deployment controller and the scheduler, the
PDB's status by the disruption controller. The mirror pods are what a control-plane kubelet
posts for its static pods; the bare pods belong to no controller (a drain needs --force)."""

from __future__ import annotations

import hashlib
from typing import Any

Obj = dict[str, Any]
DEMO_NAMESPACE = "demo"
KUBELET_SHUTDOWN = "kubelet-shutdown"
DECOMMISSION_LABEL = "promenade-decomission"
STUCK_ANNOTATION = "sitesim.berth.io/stuck-terminating"
GRACE_SECONDS = 2  # pods' terminationGracePeriodSeconds: kwok removes them within it


def _container(name: str, image: str) -> list[Obj]:
    return [{"name": name, "image": image}]


def _daemonset(name: str, labels: dict[str, str], spec: Obj) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system", "labels": labels},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"terminationGracePeriodSeconds": GRACE_SECONDS,
                                           **spec}}}}


def node_agent_daemonset() -> Obj:
    """A DaemonSet with a pod on every node."""
    return _daemonset("node-agent", {"application": "node-agent"}, {
        "containers": _container("agent", "quay.io/prometheus/node-exporter:v1.8.2"),
        "tolerations": [{"operator": "Exists"}]})


def kubelet_shutdown_daemonset() -> Obj:
    """Runs on nodes labelled `promenade-decomission: enabled` and stops their kubelet (the
    site's host agent plays what its script does on a real host)."""
    return _daemonset(KUBELET_SHUTDOWN, {"application": KUBELET_SHUTDOWN}, {
        "containers": _container("shutdown", "docker.io/library/busybox:1.36"),
        "nodeSelector": {DECOMMISSION_LABEL: "enabled"},
        "hostPID": True, "tolerations": [{"operator": "Exists"}]})


def mirror_pod(node: str, node_uid: str, component: str) -> Obj:
    """A static pod's mirror as the kubelet of `node` posts it (owned by its Node)."""
    digest = hashlib.md5(f"{component}-{node}".encode()).hexdigest()  # noqa: S324 - an id
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{component}-{node}", "namespace": "kube-system",
        "labels": {"component": component, "tier": "control-plane"},
        "annotations": {"kubernetes.io/config.mirror": digest,
                        "kubernetes.io/config.hash": digest,
                        "kubernetes.io/config.source": "file"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid,
                             "controller": True}]},
        "spec": {"nodeName": node, "containers": _container(
            component, f"registry.k8s.io/{component}:v1.36.3"), "priority": 2000001000,
            "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}]}}


def web_deployment(compute: list[str], replicas: int) -> Obj:
    """A Deployment whose pods only run on the compute nodes."""
    labels = {"application": "web"}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": list(compute)}]}]}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": DEMO_NAMESPACE, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "terminationGracePeriodSeconds": GRACE_SECONDS,
                         "containers": [{**_container("web", "docker.io/library/nginx:1.27")[0],
                                         "resources": {"requests": {"cpu": "500m",
                                                                    "memory": "256Mi"}}}],
                         "affinity": affinity}}}}


def queue_statefulset(compute: list[str], replicas: int) -> Obj:
    """A StatefulSet (stable names: an evicted pod comes back under the same name once the
    old one is gone) on the compute nodes, with no budget of its own."""
    labels = {"application": "queue"}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": list(compute)}]}]}}}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "queue", "namespace": DEMO_NAMESPACE, "labels": labels},
            "spec": {"replicas": replicas, "serviceName": "queue",
                     "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "terminationGracePeriodSeconds": GRACE_SECONDS,
                         "containers": _container("queue", "docker.io/library/redis:7.4"),
                         "affinity": affinity}}}}


def web_pdb(min_available: int) -> Obj:
    """The PodDisruptionBudget of the web Deployment."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": DEMO_NAMESPACE},
            "spec": {"minAvailable": min_available,
                     "selector": {"matchLabels": {"application": "web"}}}}


def bare_pod(name: str, node: str, *, empty_dir: bool = False) -> Obj:
    """A pod no controller manages (drain needs --force), optionally with an emptyDir."""
    spec: Obj = {"nodeName": node, "terminationGracePeriodSeconds": GRACE_SECONDS,
                 "containers": _container(name, "docker.io/library/busybox:1.36")}
    if empty_dir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": DEMO_NAMESPACE,
                         "labels": {"application": name}}, "spec": spec}


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def demo_workloads(compute: list[str]) -> list[Obj]:
    """Everything but the mirror pods (they need their Node's uid): DaemonSets, then a
    Deployment of 3 behind a PDB of minAvailable 2, a StatefulSet of 2 and two bare pods on
    the compute nodes."""
    objects = [namespace(DEMO_NAMESPACE), node_agent_daemonset()]
    if compute:
        objects += [web_deployment(compute, 3), web_pdb(2), queue_statefulset(compute, 2),
                    bare_pod("debug-shell", compute[0]),
                    bare_pod("scratch-cache", compute[1 % len(compute)], empty_dir=True)]
    return objects
