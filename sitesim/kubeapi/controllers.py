"""The background loop: simulated kubelets, pod lifecycle, garbage collection and PDB status."""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any

from sitesim.kubeapi import disruption, factories, pods, scheduling, workloads
from sitesim.kubeapi.resources import BY_GROUP_PLURAL, RESOURCES

if TYPE_CHECKING:
    from sitesim.kubeapi.state import ClusterState as KubeCluster

LOG = logging.getLogger(__name__)
Obj = dict[str, Any]
NODES = BY_GROUP_PLURAL[("", "nodes")]
PODS = BY_GROUP_PLURAL[("", "pods")]
PDBS = BY_GROUP_PLURAL[("policy", "poddisruptionbudgets")]
DECOMMISSION_LABEL = "promenade-decomission"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


def run_controllers(cluster: KubeCluster) -> None:
    """Reconcile on every change and when timers fall due, until the cluster stops."""
    while not cluster.stopping.is_set():
        cluster.kick.clear()
        next_due: float | None = None
        try:
            next_due = reconcile(cluster)
            cluster.flush_callbacks()
        except Exception:  # the loop must survive one bad object
            LOG.exception("kube controllers: reconcile failed")
        wait = cluster.timings.controller_interval
        if next_due is not None:
            wait = max(0.0, min(wait, next_due - cluster.clock()))
        cluster.kick.wait(wait)


def reconcile(cluster: KubeCluster) -> float | None:
    """One pass of every controller; returns when the next timer falls due."""
    with cluster.lock:
        labelled = [n["metadata"]["name"] for n in cluster.store.iter(NODES)
                    if (n["metadata"].get("labels") or {}).get(DECOMMISSION_LABEL) == "enabled"]
    blocked = {n for n in labelled if cluster.hooks.fault("kube.kubelet_shutdown", n) is not None}
    with cluster.lock:
        names = [n["metadata"]["name"] for n in cluster.store.iter(NODES)]
    hung = {n for n in names if cluster.hooks.fault("kube.eviction", n) == "hang"}
    with cluster.lock:
        _release_stuck(cluster, hung)
        for name in [n["metadata"]["name"] for n in cluster.store.iter(NODES)]:
            _kubelet(cluster, name, name in blocked)
        _garbage_collect(cluster)
        _out_of_service(cluster)
        for plural, step in (("deployments", workloads.reconcile_deployment),
                             ("replicasets", workloads.reconcile_replicaset),
                             ("statefulsets", workloads.reconcile_statefulset),
                             ("daemonsets", workloads.reconcile_daemonset)):
            for obj in list(cluster.store.iter(BY_GROUP_PLURAL[("apps", plural)])):
                step(cluster, obj)
        for pod in list(cluster.store.iter(PODS)):
            _pod(cluster, pod)
        for pdb in list(cluster.store.iter(PDBS)):
            _pdb_status(cluster, pdb)
        return _next_due(cluster)


def _next_due(cluster: KubeCluster) -> float | None:
    """The earliest timer still in the future (past-due work that is blocked, e.g. a pod on
    a NotReady node, is retried on the next change or after `controller_interval`)."""
    times = list(cluster.timers.terminate_at.values()) + list(cluster.timers.create_at.values())
    for sim in cluster.nodes.values():
        times += [t for t in (sim.shutdown_at, sim.unknown_at) if t is not None]
    now = cluster.clock()
    future = [t for t in times if t > now]
    return min(future) if future else None


def _shutdown_pod_running(cluster: KubeCluster, name: str) -> bool:
    """The kubelet-shutdown DaemonSet's pod runs here (or no such DaemonSet exists)."""
    shutdown_sets = [
        ds for ds in cluster.store.iter(BY_GROUP_PLURAL[("apps", "daemonsets")])
        if DECOMMISSION_LABEL in ((ds["spec"]["template"].get("spec") or {})
                                  .get("nodeSelector") or {})]
    if not shutdown_sets:
        return True
    uids = {ds["metadata"]["uid"] for ds in shutdown_sets}
    return any(
        p["spec"].get("nodeName") == name and (p.get("status") or {}).get("phase") == "Running"
        and (factories.controller_of(p) or {}).get("uid") in uids
        for p in cluster.store.iter(PODS))


def _kubelet(cluster: KubeCluster, name: str, blocked: bool) -> None:
    """Stop the kubelet of a node being decommissioned; its Ready turns Unknown later."""
    sim = cluster.nodes.get(name)
    node = cluster.store.peek(NODES, "", name)
    if sim is None or node is None:
        return
    labels = node["metadata"].get("labels") or {}
    wants_shutdown = (labels.get(DECOMMISSION_LABEL) == "enabled" and sim.shutdown_enabled
                      and sim.ready and not blocked)
    now = cluster.clock()
    if sim.kubelet_running:
        if not wants_shutdown or not _shutdown_pod_running(cluster, name):
            sim.shutdown_at = None
        elif sim.shutdown_at is None:
            sim.shutdown_at = now + cluster.timings.kubelet_shutdown_delay
            cluster.hooks.record_operation("kube", "kubelet_shutdown", name,
                                           cluster.timings.kubelet_shutdown_delay)
        elif now >= sim.shutdown_at:
            sim.kubelet_running, sim.shutdown_at = False, None
            sim.unknown_at = now + cluster.timings.not_ready_delay
            cluster.hooks.record_operation("kube", "node_not_ready", name,
                                           cluster.timings.not_ready_delay)
    elif sim.unknown_at is not None and now >= sim.unknown_at:
        sim.unknown_at = None
        sim.ready = False
    cluster.sync_node_ready(name)


def _garbage_collect(cluster: KubeCluster) -> None:
    """Remove pods of deleted nodes and objects whose controller owner is gone."""
    uids = {o["metadata"]["uid"] for res in RESOURCES for o in cluster.store.iter(res)}
    nodes = {n["metadata"]["name"] for n in cluster.store.iter(NODES)}
    for res in RESOURCES:
        for obj in list(cluster.store.iter(res)):
            owner = factories.controller_of(obj)
            orphan = owner is not None and owner.get("kind") != "Node" \
                and owner.get("uid") not in uids
            node = (obj.get("spec") or {}).get("nodeName") if res.plural == "pods" else None
            if orphan or (node and node not in nodes):
                meta = obj["metadata"]
                cluster.timers.terminate_at.pop(meta["uid"], None)
                cluster.store.delete(res, meta.get("namespace", ""), meta["name"])


def _release_stuck(cluster: KubeCluster, hung: set[str]) -> None:
    """Terminations held by a `hang` eviction fault go on once the fault is cleared."""
    if not cluster.timers.stuck:
        return
    for pod in cluster.store.iter(PODS):
        uid = pod["metadata"]["uid"]
        if uid in cluster.timers.stuck and pod["spec"].get("nodeName") not in hung:
            cluster.timers.stuck.discard(uid)


def _out_of_service(cluster: KubeCluster) -> None:
    """Non-graceful node shutdown: on a node tainted out-of-service (NoExecute), the taint
    manager deletes every pod that does not tolerate the taint, and the pod GC force-deletes
    every terminating pod once the node is not Ready (no kubelet has to confirm)."""
    for node in list(cluster.store.iter(NODES)):
        taint = next((t for t in (node.get("spec") or {}).get("taints") or []
                      if t.get("key") == OUT_OF_SERVICE and t.get("effect") == "NoExecute"),
                     None)
        if taint is None:
            continue
        name = node["metadata"]["name"]
        not_ready = factories.node_ready_status(node) != "True"
        for pod in list(cluster.store.iter(PODS)):
            if pod["spec"].get("nodeName") != name:
                continue
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                if not_ready:  # the pod GC does not look at tolerations
                    cluster.timers.terminate_at.pop(meta["uid"], None)
                    cluster.timers.stuck.discard(meta["uid"])
                    cluster.store.delete(PODS, meta["namespace"], meta["name"])
            elif not scheduling.tolerates(pod["spec"], taint):
                pods.delete_pod(cluster, copy.deepcopy(pod), None)


def _pod(cluster: KubeCluster, pod: Obj) -> None:
    """Bind pending pods, mirror node readiness into pod readiness, finish terminations."""
    if pod["metadata"].get("deletionTimestamp"):
        pods.finish_termination(cluster, pod)
        return
    node_name = pod["spec"].get("nodeName")
    if not node_name:
        node_name = scheduling.pick_node(cluster, pod["spec"], [])
        if node_name is None:
            return
    node = cluster.store.peek(NODES, "", node_name)
    if node is None:
        return
    ready = factories.node_ready_status(node) == "True"
    phase = (pod.get("status") or {}).get("phase")
    starts = phase in (None, "Pending") and ready
    flips = phase == "Running" and factories.is_pod_ready(pod) != ready
    if not (starts or flips or node_name != pod["spec"].get("nodeName")):
        return
    updated = copy.deepcopy(pod)
    updated["spec"]["nodeName"] = node_name
    if starts:
        pods.on_create(cluster, updated)
    elif flips:
        pods.set_ready(updated, ready)
    cluster.store.replace(PODS, updated, check_rv=False)


def _pdb_status(cluster: KubeCluster, pdb: Obj) -> None:
    budget = disruption.compute_budget(pdb, list(cluster.store.iter(PODS)),
                                       pods.scale_lookup(cluster))
    status = disruption.status_of(budget, int(pdb["metadata"].get("generation", 1)),
                                  cluster.now(), pdb.get("status"))
    if status != pdb.get("status"):
        updated = copy.deepcopy(pdb)
        updated["status"] = status
        cluster.store.replace(PDBS, updated, check_rv=False)
