"""Pod life: binding at creation, graceful deletion, and the eviction subresource."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from sitesim.kubeapi import disruption, factories
from sitesim.kubeapi.errors import (
    KubeBadRequest,
    KubeInternal,
    KubeTooManyRequests,
    not_found,
    success_status,
)
from sitesim.kubeapi.resources import BY_GROUP_PLURAL

if TYPE_CHECKING:
    from sitesim.kubeapi.state import ClusterState as KubeCluster

Obj = dict[str, Any]
PODS = BY_GROUP_PLURAL[("", "pods")]
NODES = BY_GROUP_PLURAL[("", "nodes")]
PDBS = BY_GROUP_PLURAL[("policy", "poddisruptionbudgets")]
MULTIPLE_PDBS = ("This pod has more than one PodDisruptionBudget, which the eviction "
                 "subresource does not support.")


def on_create(cluster: KubeCluster, pod: Obj) -> None:
    """A pod created already bound to a present node starts running there at once."""
    node_name = pod["spec"].get("nodeName")
    node = cluster.store.peek(NODES, "", node_name) if node_name else None
    if node is None:
        return
    sim = cluster.nodes.get(node_name or "")
    ready = factories.node_ready_status(node) == "True"
    pod["status"] = factories.running_pod_status(pod, ready, cluster.now(),
                                                 sim.address if sim else "10.23.0.1")


def _termination_delay(cluster: KubeCluster, pod: Obj, grace: int | None) -> float:
    if grace is None:
        grace = int(pod["spec"].get("terminationGracePeriodSeconds", 30))
    return max(0.0, min(float(grace), cluster.timings.pod_termination_delay))


def delete_pod(cluster: KubeCluster, pod: Obj, grace: int | None, *,
               hang: bool = False) -> Obj:
    """Mark a running pod for deletion (it goes after a delay); remove others at once."""
    meta = pod["metadata"]
    ns, name = meta["namespace"], meta["name"]
    running = (pod.get("status") or {}).get("phase") == "Running" and pod["spec"].get("nodeName")
    if grace == 0 or not running:
        cluster.timers.terminate_at.pop(meta["uid"], None)
        return cluster.store.delete(PODS, ns, name)
    delay = _termination_delay(cluster, pod, grace)
    due = cluster.clock() + delay
    if meta.get("deletionTimestamp"):
        current = cluster.timers.terminate_at.get(meta["uid"])
        if current is not None and due < current:
            cluster.timers.terminate_at[meta["uid"]] = due
        return copy.deepcopy(pod)
    meta["deletionTimestamp"] = cluster.now()
    meta["deletionGracePeriodSeconds"] = int(grace if grace is not None else
                                             pod["spec"].get("terminationGracePeriodSeconds", 30))
    set_ready(pod, False)
    if hang:
        cluster.timers.stuck.add(meta["uid"])
    else:
        cluster.timers.terminate_at[meta["uid"]] = due
        cluster.hooks.record_operation("kube", "pod_termination", pod["spec"].get("nodeName"),
                                       delay)
    return cluster.store.replace(PODS, pod, check_rv=False)


def set_ready(pod: Obj, ready: bool) -> None:
    flag = "True" if ready else "False"
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            cond["status"] = flag
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        status["ready"] = ready


def scale_lookup(cluster: KubeCluster) -> disruption.ScaleLookup:
    """How the disruption arithmetic finds a controller's replica count."""
    def lookup(kind: str, namespace: str, name: str) -> int | None:
        res = {"ReplicaSet": ("apps", "replicasets"),
               "StatefulSet": ("apps", "statefulsets")}.get(kind)
        if res is None:
            return None
        owner = cluster.store.peek(BY_GROUP_PLURAL[res], namespace, name)
        return None if owner is None else int((owner.get("spec") or {}).get("replicas", 1))
    return lookup


def evict(cluster: KubeCluster, namespace: str, name: str, body: Any) -> Obj:
    """The eviction subresource: 201, 429 (budget), 500 (several budgets or fault), 404."""
    if not isinstance(body, dict):
        raise KubeBadRequest("the body must be an Eviction object")
    given = (body.get("metadata") or {}).get("name")
    if given and given != name:
        raise KubeBadRequest("name in URL does not match name in Eviction object")
    options = body.get("deleteOptions") or {}
    grace = options.get("gracePeriodSeconds")
    with cluster.lock:
        found = cluster.store.peek(PODS, namespace, name)
        node = (found or {}).get("spec", {}).get("nodeName")
    # The site's hooks take the site's lock: never call them under the cluster lock.
    cluster.hooks.record_call("kube", "eviction", node)
    fault = cluster.hooks.fault("kube.eviction", node) if node else None
    if found is None:
        raise not_found("pods", name)
    if fault == "fail":
        raise KubeInternal(f'eviction of pod "{name}" failed: injected fault on node {node}')
    with cluster.lock:
        pod = copy.deepcopy(cluster.store.get(PODS, namespace, name))
        if pod["metadata"].get("deletionTimestamp"):
            return success_status(201)
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed", "Pending"):
            _check_budget(cluster, pod)
        delete_pod(cluster, pod, grace if isinstance(grace, int) else None,
                   hang=fault == "hang")
        return success_status(201)


def _check_budget(cluster: KubeCluster, pod: Obj) -> None:
    ns = pod["metadata"]["namespace"]
    all_pods = list(cluster.store.iter(PODS, ns))
    budgets = [b for b in cluster.store.iter(PDBS, ns) if disruption.pods_of(b, [pod])]
    if len(budgets) > 1:
        raise KubeInternal(MULTIPLE_PDBS)
    if not budgets:
        return
    pdb = budgets[0]
    budget = disruption.compute_budget(pdb, all_pods, scale_lookup(cluster))
    if budget.disruptions_allowed <= 0:
        raise KubeTooManyRequests(
            "Cannot evict pod as it would violate the pod's disruption budget.",
            causes=[{"reason": "DisruptionBudget",
                     "message": disruption.violation_message(pdb, budget)}])


def finish_termination(cluster: KubeCluster, pod: Obj) -> bool:
    """Remove a terminating pod once its delay passed and its kubelet confirms it."""
    uid = pod["metadata"]["uid"]
    if uid in cluster.timers.stuck:
        return False
    due = cluster.timers.terminate_at.get(uid)
    node_name = pod["spec"].get("nodeName")
    node = cluster.store.peek(NODES, "", node_name) if node_name else None
    if node is not None and factories.node_ready_status(node) != "True":
        return False
    if node is not None and (due is None or cluster.clock() < due):
        if due is None:
            cluster.timers.terminate_at[uid] = cluster.clock() + _termination_delay(
                cluster, pod, pod["metadata"].get("deletionGracePeriodSeconds"))
        return False
    cluster.timers.terminate_at.pop(uid, None)
    cluster.store.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
    return True
