"""Builders of schema-complete Kubernetes objects (what the pydantic client models require)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from sitesim.kubeapi.errors import KubeInvalid

Obj = dict[str, Any]

KUBELET_VERSION = "v1.32.4"
HOSTNAME_LABEL = "kubernetes.io/hostname"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"


def _uid_like(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def node_info(name: str) -> Obj:
    """A complete NodeSystemInfo for a simulated node."""
    return {
        "architecture": "amd64",
        "bootID": _uid_like("boot-" + name),
        "containerRuntimeVersion": "containerd://1.7.24",
        "kernelVersion": "6.1.0-28-amd64",
        "kubeProxyVersion": KUBELET_VERSION,
        "kubeletVersion": KUBELET_VERSION,
        "machineID": hashlib.md5(name.encode()).hexdigest(),  # noqa: S324 - an id, not security
        "operatingSystem": "linux",
        "osImage": "Debian GNU/Linux 12 (bookworm)",
        "systemUUID": _uid_like("system-" + name),
    }


def node_conditions(ready: str, now: str) -> list[Obj]:
    """Pressure conditions (all False) and a Ready condition with status True/False/Unknown."""
    reasons = {
        "True": ("KubeletReady", "kubelet is posting ready status"),
        "False": ("KubeletNotReady", "container runtime network not ready"),
        "Unknown": ("NodeStatusUnknown", "Kubelet stopped posting node status."),
    }
    pressure = [
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ]
    conds = [
        {"type": t, "status": "False" if ready != "Unknown" else "Unknown", "reason": r,
         "message": m, "lastHeartbeatTime": now, "lastTransitionTime": now}
        for t, r, m in pressure
    ]
    reason, message = reasons[ready]
    conds.append({"type": "Ready", "status": ready, "reason": reason, "message": message,
                  "lastHeartbeatTime": now, "lastTransitionTime": now})
    return conds


def node_labels(name: str, labels: dict[str, str], *, control_plane: bool) -> dict[str, str]:
    """The labels a kubelet registers (well-known ones, then the given ones)."""
    all_labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        HOSTNAME_LABEL: name,
    }
    if control_plane:
        all_labels[CONTROL_PLANE_LABEL] = ""
    all_labels.update(labels)
    return all_labels


def node_object(name: str, labels: dict[str, str], *, control_plane: bool, ready: str,
                address: str, now: str) -> Obj:
    """A Node as a kubelet registers it."""
    all_labels = node_labels(name, labels, control_plane=control_plane)
    capacity = {"cpu": "8", "memory": "32778508Ki", "pods": "110", "ephemeral-storage":
                "101430960Ki"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels, "annotations": {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": "10.97.0.0/24", "podCIDRs": ["10.97.0.0/24"]},
        "status": {
            "addresses": [{"type": "InternalIP", "address": address},
                          {"type": "Hostname", "address": name}],
            "allocatable": dict(capacity),
            "capacity": dict(capacity),
            "conditions": node_conditions(ready, now),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": node_info(name),
            "images": [],
        },
    }


def complete_node(node: Obj, now: str) -> None:
    """Fill what a Node created through the API lacks (nodeInfo, conditions)."""
    name = node["metadata"]["name"]
    status = node.setdefault("status", {})
    info = status.setdefault("nodeInfo", {})
    for key, value in node_info(name).items():
        info.setdefault(key, value)
    if not status.get("conditions"):
        status["conditions"] = node_conditions("True", now)
    node.setdefault("spec", {})


def owner_reference(owner: Obj, *, controller: bool = True) -> Obj:
    """An ownerReference pointing at `owner`."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Obj) -> Obj | None:
    """The ownerReference marked controller, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def default_pod_spec(spec: Obj) -> None:
    """Apply the API server's defaults to a pod spec and validate its containers."""
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise KubeInvalid("spec.containers: Required value")
    for i, container in enumerate(containers):
        if not isinstance(container, dict) or not container.get("name"):
            raise KubeInvalid(f"spec.containers[{i}].name: Required value")
        container.setdefault("image", "busybox:1.36")
        container.setdefault("imagePullPolicy", "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)


def pending_pod_status(now: str) -> Obj:
    """Status of a pod not yet bound to a node."""
    return {"phase": "Pending", "qosClass": "BestEffort", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "lastTransitionTime": now, "message": "0/0 nodes are available"}]}


def running_pod_status(pod: Obj, ready: bool, now: str, host_ip: str) -> Obj:
    """Status of a pod whose containers run on its node."""
    flag = "True" if ready else "False"
    containers = pod["spec"]["containers"]
    statuses = [{
        "name": c["name"],
        "image": c.get("image", "busybox:1.36"),
        "imageID": "docker.io/library/" + str(c.get("image", "busybox")) + "@sha256:" + "0" * 64,
        "containerID": "containerd://" + hashlib.sha256(
            (pod["metadata"].get("uid", "") + c["name"]).encode()).hexdigest(),
        "ready": ready,
        "restartCount": 0,
        "started": True,
        "state": {"running": {"startedAt": now}},
    } for c in containers]
    return {
        "phase": "Running",
        "qosClass": "BestEffort",
        "hostIP": host_ip,
        "podIP": host_ip,
        "startTime": now,
        "conditions": [
            {"type": t, "status": s, "lastTransitionTime": now}
            for t, s in (("PodReadyToStartContainers", "True"), ("Initialized", "True"),
                         ("Ready", flag), ("ContainersReady", flag), ("PodScheduled", "True"))
        ],
        "containerStatuses": statuses,
    }


def pod_from_template(template: Obj, name: str, namespace: str, owner: Obj | None) -> Obj:
    """A new pod from a workload's pod template."""
    meta = copy.deepcopy(template.get("metadata") or {})
    meta.pop("creationTimestamp", None)
    meta["name"] = name
    meta["namespace"] = namespace
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]
    spec = copy.deepcopy(template.get("spec") or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def is_pod_ready(pod: Obj) -> bool:
    """True when the pod's Ready condition is True and it is not being deleted."""
    if pod["metadata"].get("deletionTimestamp"):
        return False
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def node_ready_status(node: Obj) -> str:
    """The status (True/False/Unknown) of a node's Ready condition."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return "Unknown"


def template_hash(template: Obj) -> str:
    """The pod-template-hash label value of a Deployment's ReplicaSet."""
    text = json.dumps(template, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:10]
