"""The demo workloads of a simulated site (issue 3): what a drain has to deal with."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from sitesim.kubeapi.resources import BY_GROUP_PLURAL

if TYPE_CHECKING:
    from sitesim.kubeapi.cluster import KubeCluster

Obj = dict[str, Any]
DEMO_NAMESPACE = "demo"
KUBELET_SHUTDOWN_DAEMONSET = "kubelet-shutdown"
NODES = BY_GROUP_PLURAL[("", "nodes")]


def _container(name: str, image: str) -> list[Obj]:
    return [{"name": name, "image": image}]


def _daemonset(name: str, labels: dict[str, str], spec: Obj) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system", "labels": labels},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def node_agent_daemonset() -> Obj:
    """A DaemonSet with a pod on every node."""
    return _daemonset("node-agent", {"application": "node-agent"}, {
        "containers": _container("agent", "quay.io/prometheus/node-exporter:v1.8.2"),
        "tolerations": [{"operator": "Exists"}]})


def kubelet_shutdown_daemonset() -> Obj:
    """Runs on nodes labelled `promenade-decomission: enabled` and stops their kubelet."""
    return _daemonset(KUBELET_SHUTDOWN_DAEMONSET, {"application": KUBELET_SHUTDOWN_DAEMONSET}, {
        "containers": _container("shutdown", "docker.io/library/busybox:1.36"),
        "nodeSelector": {"promenade-decomission": "enabled"},
        "hostPID": True, "tolerations": [{"operator": "Exists"}]})


def mirror_pod(cluster: KubeCluster, node: str, component: str) -> Obj | None:
    """A static pod's mirror as the kubelet of `node` posts it."""
    with cluster.lock:
        node_obj = cluster.store.peek(NODES, "", node)
        if node_obj is None:
            return None
        uid = node_obj["metadata"]["uid"]
    digest = hashlib.md5(f"{component}-{node}".encode()).hexdigest()  # noqa: S324 - an id
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{component}-{node}", "namespace": "kube-system",
        "labels": {"component": component, "tier": "control-plane"},
        "annotations": {"kubernetes.io/config.mirror": digest,
                        "kubernetes.io/config.hash": digest,
                        "kubernetes.io/config.source": "file"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid,
                             "controller": True}]},
        "spec": {"nodeName": node, "containers": _container(
            component, f"registry.k8s.io/{component}:v1.32.4"), "priority": 2000001000,
            "priorityClassName": "system-node-critical"}}


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
                         "containers": [{**_container("web", "docker.io/library/nginx:1.27")[0],
                                         "resources": {"requests": {"cpu": "500m",
                                                                    "memory": "256Mi"}}}],
                         "affinity": affinity}}}}


def web_pdb(min_available: int) -> Obj:
    """The PodDisruptionBudget of the web Deployment."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": DEMO_NAMESPACE},
            "spec": {"minAvailable": min_available,
                     "selector": {"matchLabels": {"application": "web"}}}}


def bare_pod(name: str, node: str, *, empty_dir: bool = False) -> Obj:
    """A pod no controller manages (drain needs --force), optionally with an emptyDir."""
    spec: Obj = {"nodeName": node, "containers": _container(name, "docker.io/library/busybox:1.36")}
    if empty_dir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": DEMO_NAMESPACE,
                         "labels": {"application": name}}, "spec": spec}


def seed_workloads(cluster: KubeCluster, control: list[str], compute: list[str]) -> None:
    """Create the demo workloads: DaemonSets, mirror pods, a Deployment with a PDB, bare pods."""
    cluster.apply({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": DEMO_NAMESPACE}})
    cluster.apply(node_agent_daemonset())
    cluster.apply(kubelet_shutdown_daemonset())
    for node in control:
        for component in ("kube-apiserver", "kube-scheduler"):
            pod = mirror_pod(cluster, node, component)
            if pod is not None:
                cluster.apply(pod)
    if not compute:
        return
    cluster.apply(web_deployment(compute, 3))
    cluster.apply(web_pdb(2))
    cluster.apply(bare_pod("debug-shell", compute[0]))
    cluster.apply(bare_pod("scratch-cache", compute[1 % len(compute)], empty_dir=True))
