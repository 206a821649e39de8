"""Controllers for Deployments, ReplicaSets, StatefulSets and DaemonSets."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from sitesim.kubeapi import factories, pods
from sitesim.kubeapi.errors import KubeAlreadyExists
from sitesim.kubeapi.resources import BY_GROUP_PLURAL
from sitesim.kubeapi.scheduling import pick_node, random_suffix, repels, selector_fits

if TYPE_CHECKING:
    from sitesim.kubeapi.state import ClusterState as KubeCluster

Obj = dict[str, Any]
NODES = BY_GROUP_PLURAL[("", "nodes")]
PODS = BY_GROUP_PLURAL[("", "pods")]
DEPLOYMENTS = BY_GROUP_PLURAL[("apps", "deployments")]
REPLICASETS = BY_GROUP_PLURAL[("apps", "replicasets")]
STATEFULSETS = BY_GROUP_PLURAL[("apps", "statefulsets")]
DAEMONSETS = BY_GROUP_PLURAL[("apps", "daemonsets")]


def owned_pods(cluster: KubeCluster, owner: Obj) -> list[Obj]:
    """Pods whose controller reference points at `owner` (terminating ones included)."""
    uid = owner["metadata"]["uid"]
    return [p for p in cluster.store.iter(PODS, owner["metadata"]["namespace"])
            if (factories.controller_of(p) or {}).get("uid") == uid]


def _active(pod_list: list[Obj]) -> list[Obj]:
    return [p for p in pod_list if not p["metadata"].get("deletionTimestamp")]


def _write_status(cluster: KubeCluster, res: Any, obj: Obj, status: Obj) -> None:
    if obj.get("status") == status:
        return
    updated = copy.deepcopy(obj)
    updated["status"] = status
    cluster.store.replace(res, updated, check_rv=False)


def create_pod(cluster: KubeCluster, owner: Obj, name: str, node: str | None) -> None:
    """Create a controller's pod from its template, bound to `node` when one fits."""
    pod = factories.pod_from_template(owner["spec"]["template"], name,
                                      owner["metadata"]["namespace"], owner)
    factories.default_pod_spec(pod["spec"])
    if node is not None:
        pod["spec"]["nodeName"] = node
    pod["status"] = factories.pending_pod_status(cluster.now())
    pods.on_create(cluster, pod)
    cluster.store.create(PODS, pod)


def create_generated_pod(cluster: KubeCluster, owner: Obj, node: str | None) -> None:
    """A pod named after its owner plus a random suffix; a suffix already taken (likely
    among thousands of pods) is drawn again, as the API server retries generated names."""
    for attempt in range(8):
        try:
            create_pod(cluster, owner, f"{owner['metadata']['name']}-{random_suffix()}", node)
            return
        except KubeAlreadyExists:
            if attempt == 7:
                raise


def _fill_due(cluster: KubeCluster, owner: Obj, deficit: bool) -> bool:
    """True when a controller may create its missing pods now (after the recreate delay)."""
    uid = owner["metadata"]["uid"]
    if not deficit:
        cluster.timers.create_at.pop(uid, None)
        return False
    if not (owner.get("status") or {}).get("observedGeneration"):
        return True
    due = cluster.timers.create_at.setdefault(uid, cluster.clock() + cluster.timings.recreate_delay)
    if cluster.clock() < due:
        return False
    cluster.timers.create_at.pop(uid, None)
    return True


def reconcile_deployment(cluster: KubeCluster, deploy: Obj) -> None:
    """Keep one ReplicaSet per Deployment, sized as the Deployment."""
    spec, meta = deploy["spec"], deploy["metadata"]
    pod_hash = factories.template_hash(spec["template"])
    rs_name = f"{meta['name']}-{pod_hash}"
    replicas = int(spec.get("replicas", 1))
    owned = [r for r in cluster.store.iter(REPLICASETS, meta["namespace"])
             if (factories.controller_of(r) or {}).get("uid") == meta["uid"]]
    for old in owned:
        if old["metadata"]["name"] != rs_name:
            cluster.store.delete(REPLICASETS, meta["namespace"], old["metadata"]["name"])
    current = cluster.store.peek(REPLICASETS, meta["namespace"], rs_name)
    if current is None:
        template = copy.deepcopy(spec["template"])
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = \
            pod_hash
        selector = copy.deepcopy(spec["selector"])
        selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": rs_name, "namespace": meta["namespace"],
                           "labels": dict(template["metadata"]["labels"]),
                           "ownerReferences": [factories.owner_reference(deploy)]},
              "spec": {"replicas": replicas, "selector": selector, "template": template},
              "status": {"replicas": 0}}
        cluster.store.create(REPLICASETS, rs)
        current = cluster.store.peek(REPLICASETS, meta["namespace"], rs_name)
    elif int(current["spec"].get("replicas", 1)) != replicas:
        updated = copy.deepcopy(current)
        updated["spec"]["replicas"] = replicas
        cluster.store.replace(REPLICASETS, updated, check_rv=False)
        current = cluster.store.peek(REPLICASETS, meta["namespace"], rs_name)
    rs_status = (current or {}).get("status") or {}
    ready = int(rs_status.get("readyReplicas", 0))
    _write_status(cluster, DEPLOYMENTS, deploy, {
        "observedGeneration": meta.get("generation", 1),
        "replicas": int(rs_status.get("replicas", 0)), "updatedReplicas":
        int(rs_status.get("replicas", 0)), "readyReplicas": ready, "availableReplicas": ready,
        "unavailableReplicas": max(0, replicas - ready),
        "conditions": [{"type": "Available", "status": "True" if ready >= replicas else "False",
                        "reason": "MinimumReplicasAvailable"}]})


def reconcile_replicaset(cluster: KubeCluster, rs: Obj) -> None:
    """Keep `replicas` live pods, creating replacements after the recreate delay."""
    replicas = int(rs["spec"].get("replicas", 1))
    all_pods = owned_pods(cluster, rs)
    active = _active(all_pods)
    for extra in active[replicas:]:
        pods.delete_pod(cluster, copy.deepcopy(extra), None)
    active = active[:replicas]
    if _fill_due(cluster, rs, len(active) < replicas):
        for _ in range(replicas - len(active)):
            node = pick_node(cluster, rs["spec"]["template"].get("spec") or {}, active)
            create_generated_pod(cluster, rs, node)
            active = _active(owned_pods(cluster, rs))
    ready = sum(1 for p in active if factories.is_pod_ready(p))
    _write_status(cluster, REPLICASETS, rs, {
        "replicas": len(active), "fullyLabeledReplicas": len(active), "readyReplicas": ready,
        "availableReplicas": ready, "observedGeneration": rs["metadata"].get("generation", 1)})


def reconcile_statefulset(cluster: KubeCluster, sts: Obj) -> None:
    """Keep pods <name>-0..N-1; a gone ordinal is recreated after the recreate delay."""
    meta = sts["metadata"]
    replicas = int(sts["spec"].get("replicas", 1))
    present = {p["metadata"]["name"]: p for p in owned_pods(cluster, sts)}
    wanted = [f"{meta['name']}-{i}" for i in range(replicas)]
    for name, pod in present.items():
        if name not in wanted and not pod["metadata"].get("deletionTimestamp"):
            pods.delete_pod(cluster, copy.deepcopy(pod), None)
    missing = [n for n in wanted if n not in present]
    if _fill_due(cluster, sts, bool(missing)):
        for name in missing:
            siblings = _active(owned_pods(cluster, sts))
            node = pick_node(cluster, sts["spec"]["template"].get("spec") or {}, siblings)
            create_pod(cluster, sts, name, node)
    active = [p for p in _active(owned_pods(cluster, sts)) if p["metadata"]["name"] in wanted]
    ready = sum(1 for p in active if factories.is_pod_ready(p))
    _write_status(cluster, STATEFULSETS, sts, {
        "replicas": len(active), "readyReplicas": ready, "availableReplicas": ready,
        "currentReplicas": len(active), "updatedReplicas": len(active),
        "observedGeneration": meta.get("generation", 1)})


def reconcile_daemonset(cluster: KubeCluster, ds: Obj) -> None:
    """One pod on every node matching the template's nodeSelector, none elsewhere."""
    spec = ds["spec"]["template"].get("spec") or {}
    eligible = {n["metadata"]["name"] for n in cluster.store.iter(NODES)
                if selector_fits(spec, n) and not repels(spec, n)}
    active = _active(owned_pods(cluster, ds))
    placed: set[str] = set()
    for pod in active:
        node = pod["spec"].get("nodeName")
        if node not in eligible or node in placed:
            pods.delete_pod(cluster, copy.deepcopy(pod), None)
        else:
            placed.add(node)
    for node in sorted(eligible - placed):
        create_generated_pod(cluster, ds, node)
    active = [p for p in _active(owned_pods(cluster, ds)) if p["spec"].get("nodeName") in eligible]
    ready = sum(1 for p in active if factories.is_pod_ready(p))
    _write_status(cluster, DAEMONSETS, ds, {
        "currentNumberScheduled": len(active), "desiredNumberScheduled": len(eligible),
        "numberMisscheduled": 0, "numberReady": ready, "numberAvailable": ready,
        "numberUnavailable": len(eligible) - ready, "updatedNumberScheduled": len(active),
        "observedGeneration": ds["metadata"].get("generation", 1)})
