"""What a decommission of a node would do, read from the cluster as it is now; changes nothing.

The preview walks the same phases as `decommission` and answers, for each, what would happen
and what would stop it: the pods a drain would evict or skip (and why), the
PodDisruptionBudgets and eviction locks in the way, whether the evicted pods fit on the
nodes that stay, and each impacted etcd cluster's quorum before and after the removal.
Blockers are what would make the decommission fail; warnings what it would survive.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from common.clients.generated.promenade import EtcdAfterLeaving, EtcdImpact
from common.clients.promenade import DecommissionPreview
from common.errors import BerthError
from common.jsontypes import JSONObject, as_list, as_object
from promenade_api.decommission import DecommissionParams, current_node, phases
from promenade_api.etcd.model import ClusterSpec, MemberHealth
from promenade_api.etcd.port import EtcdError
from promenade_api.etcd.quorum import project, quorum
from promenade_api.kube import capacity
from promenade_api.kube.blockers import budget_blocker, lock_blocker
from promenade_api.kube.budget import Budget, selector_matches
from promenade_api.kube.drain import DrainPlan, held_locks, plan_drain
from promenade_api.kube.model import Node, Pod
from promenade_api.service import Promenade


@dataclass(frozen=True)
class PreviewParams:
    fenced: bool = False  # the caller will confirm the power-off first (out-of-service taint)
    leaving: tuple[str, ...] = ()  # other nodes the same action takes out


@dataclass
class Findings:
    blockers: list[str]
    warnings: list[str]


def _pod(pod: Pod, reason: str) -> JSONObject:
    ctl = pod.controller
    return {"pod": pod.key, "owner": f"{ctl.kind}/{ctl.name}" if ctl else None,
            "reason": reason, "cpu_m": pod.cpu_m, "memory": pod.memory,
            "empty_dir": pod.has_empty_dir}


def _evict_reason(pod: Pod, hold: bool) -> str:
    why = "evicted last (eviction hold)" if hold else "evicted"
    if pod.controller is None:
        why += "; not managed by a controller, so not recreated"
    if pod.has_empty_dir:
        why += "; its emptyDir data is deleted"
    return why


def _budget_view(b: Budget, covered: list[str]) -> JSONObject:
    return {"budget": b.key, "disruptions_allowed": b.disruptions_allowed,
            "current_healthy": b.current_healthy, "desired_healthy": b.desired_healthy,
            "expected_pods": b.expected_pods, "unhealthy": b.unhealthy,
            "pods_on_node": [*covered], "never_allows": b.never_allows}


def _budgets(plan: DrainPlan, budgets: Sequence[Budget], found: Findings,
             fenced: bool) -> list[tuple[Budget, list[str]]]:
    """The budgets covering pods the drain evicts, each with those pods (by key)."""
    out = []
    for b in budgets:
        covered = [p.key for p in plan.evict + plan.hold
                   if p.namespace == b.namespace and selector_matches(b.selector, p.labels)]
        if not covered:
            continue
        out.append((b, covered))
        if fenced:
            continue  # the out-of-service taint deletes pods without evictions
        if b.disruptions_allowed == 0:
            ever = (" even with every pod healthy: the drain can never finish"
                    if b.never_allows else f" ({b.unhealthy} of {b.expected_pods} pods "
                    "unhealthy): the drain waits until they recover or times out")
            found.blockers.append(
                f"PodDisruptionBudget {b.key} allows 0 disruptions now (needs "
                f"{b.desired_healthy} healthy, has {b.current_healthy}){ever}; it covers "
                f"{', '.join(covered)}")
        elif len(covered) > b.disruptions_allowed:
            found.warnings.append(
                f"PodDisruptionBudget {b.key} allows {b.disruptions_allowed} disruption(s) and "
                f"covers {len(covered)} pods here: the drain waits for replacements")
        if b.unhealthy and b.disruptions_allowed > 0:
            found.warnings.append(f"PodDisruptionBudget {b.key} counts {b.unhealthy} "
                                  "unhealthy pod(s)")
    return out


def _drain(svc: Promenade, node: Node, params: PreviewParams,
           found: Findings) -> tuple[dict[str, Any], list[Pod]]:
    kube, settings = svc.kube, svc.settings.drain
    plan = plan_drain(kube.list_pods(node.name), settings,
                      lambda ns, name: kube.owner_exists("DaemonSet", ns, name))
    evicted = plan.evict + plan.hold
    budgets = _budgets(plan, kube.list_budgets(), found, params.fenced)
    locks = held_locks(node.annotations, settings.lock_patterns)
    held = sorted(p.key for p in evicted + plan.delete)
    blocking = [] if params.fenced else [lock_blocker(k, node.annotations.get(k, ""), held)
                                         for k in locks]
    for lock in blocking:
        by = f" by {lock['holder']}" if lock["holder"] else ""
        found.warnings.append(
            f"Eviction lock {lock['annotation']} held{by} on {node.name}: nothing is evicted "
            f"until it is released; it holds back {', '.join(held) or 'no pod'}")
    agent_locks = held_locks(node.annotations, settings.agent_lock_patterns)
    if agent_locks:
        found.warnings.append(f"Agent lock(s) {', '.join(agent_locks)} held on {node.name}: "
                              "after clear-labels the decommission waits (at most the drain "
                              "timeout) for their operators to remove the agents and release "
                              "them")
    blocked = [b.key for b, _ in budgets if b.disruptions_allowed == 0]
    if not params.fenced:
        blocking = [budget_blocker(b.key, covered, None) | {
            "disruptions_allowed": 0} for b, covered in budgets if b.disruptions_allowed == 0
        ] + blocking
    section = {
        "method": "fence (out-of-service taint; pods deleted without eviction)"
        if params.fenced else "drain (cordon, then evictions)",
        "evict": [_pod(p, _evict_reason(p, p in plan.hold)) for p in evicted],
        "delete": [_pod(p, "finished (Succeeded/Failed): deleted") for p in plan.delete],
        "awaiting": [_pod(p, "already terminating") for p in plan.awaiting],
        "skipped": [_pod(p, r) for p, r in plan.skipped],
        "warnings": list(plan.warnings),
        "budgets": [_budget_view(b, covered) for b, covered in budgets],
        "eviction_locks": locks,
        "agent_locks": agent_locks,
        "can_finish": params.fenced or not blocked,
        "blocked_by": [] if params.fenced else [f"PodDisruptionBudget {b}" for b in blocked],
        "blocking": blocking,  # each budget at zero and lock held, with the pods it holds
    }
    return section, evicted


def _removal_in_flight(svc: Promenade, cluster: ClusterSpec) -> str | None:
    lease = svc.kube.get_lease(svc.settings.lease_namespace, f"berth-etcd-{cluster.name}")
    if lease is None or not lease.holder:
        return None
    if (lease.renewed_at or 0.0) + lease.duration < svc.wall():
        return None
    return lease.holder


def _with_leaving(cluster: ClusterSpec, health: Sequence[MemberHealth], removing: set[int],
                  leaving: Sequence[str], found: Findings) -> EtcdAfterLeaving | None:
    """The cluster once the members of the other leaving nodes are gone too (the same action
    may remove them first): refused there is a blocker as well."""
    names = {m for n in leaving for m in cluster.member_names_of(n)}
    also = {h.member.id for h in health if h.member.name in names} - removing
    if not also:
        return None
    after = project(health, removing | also, cluster.min_healthy)
    gone = sorted(h.member.name for h in health if h.member.id in also)
    found.blockers += [f"etcd cluster {cluster.name}: once {', '.join(gone)} (leaving in the "
                       f"same action) is removed too, the removal is refused: {r}"
                       for r in after.reasons]
    return {"members": after.members_after, "healthy": after.healthy_after,
            "quorum": after.quorum_after, "also_leaving": gone, "allowed": after.allowed}


def _etcd(svc: Promenade, node: str, cluster: ClusterSpec, found: Findings,
          leaving: Sequence[str] = ()) -> EtcdImpact:
    entry: EtcdImpact = {"cluster": cluster.name, "threshold": cluster.min_healthy}
    try:
        health = svc.remover().health(cluster)
    except EtcdError as exc:
        found.blockers.append(f"etcd cluster {cluster.name} is not accessible: {exc.message}")
        return {**entry, "error": exc.message}
    names = cluster.member_names_of(node)
    removing = [h.member for h in health if h.member.name in names]
    leaders = {h.leader_id for h in health if h.healthy and h.leader_id}
    learners = sorted(h.member.name for h in health if "learner" in h.error.lower())
    after = project(health, {m.id for m in removing}, cluster.min_healthy)
    holder = _removal_in_flight(svc, cluster)
    entry.update({
        "members": [{"name": h.member.name, "healthy": h.healthy, "reachable": h.reachable,
                     "leader": h.member.id in leaders, "on_node": h.member.name in names,
                     "error": h.error} for h in health],
        "removing": sorted(m.name for m in removing),
        "before": {"members": len(health), "healthy": sum(1 for h in health if h.healthy),
                   "quorum": quorum(len(health)) if health else 0},
        "after": {"members": after.members_after, "healthy": after.healthy_after,
                  "quorum": after.quorum_after},
        "leader_move": any(m.id in leaders for m in removing),
        "learners": learners, "removal_in_flight": holder,
        "allowed": after.allowed and not learners if removing else True,
    })
    if not removing:
        return entry
    found.blockers += [f"etcd cluster {cluster.name}: removing {', '.join(entry['removing'])} "
                       f"is refused: {r}" for r in after.reasons]
    if after.allowed:
        entry["after_with_leaving"] = _with_leaving(cluster, health, {m.id for m in removing},
                                                    leaving, found)
    if learners:
        found.blockers.append(f"etcd cluster {cluster.name} has a learner "
                              f"({', '.join(learners)}): no member is removed until it is "
                              "promoted")
    if holder:
        found.warnings.append(f"Another removal from etcd cluster {cluster.name} is in flight "
                              f"(lease held by {holder}): remove-etcd waits for it")
    if after.lost and after.allowed:
        found.warnings.append(f"etcd cluster {cluster.name}: {', '.join(after.lost)} "
                              "unhealthy; quorum holds without them")
    return entry


def preview(svc: Promenade, node: str, clusters: list[ClusterSpec],
            params: PreviewParams, design_nodes: Collection[str] = ()) -> DecommissionPreview:
    """The decommission of `node` as it would run now; nothing is written anywhere."""
    found = Findings([], [])
    known = node in design_nodes or any(
        node in c.members or node in c.members.values() for c in clusters)
    dparams = DecommissionParams(fenced=params.fenced)
    current: Node | None
    try:
        current = current_node(svc, node, params.fenced, known)
    except BerthError as exc:
        if exc.code == 404:
            raise
        found.blockers.append(exc.message)
        current = svc.kube.get_node(node)
    steps = phases(node, current, dparams)
    out: DecommissionPreview = {
        "node": node, "fenced": params.fenced,
        "kubernetes": None if current is None else {
            "ready": current.ready, "ready_since": current.ready_since,
            "cordoned": current.unschedulable, "taints": list(current.taints)},
        "phases": [{"phase": name, "runs": not isinstance(run, str),
                    "note": run if isinstance(run, str) else ""} for name, run, _ in steps],
        "drain": None, "capacity": None, "etcd": [],
        "blockers": found.blockers, "warnings": found.warnings,  # filled in below
    }
    if current is not None:
        out["drain"], evicted = _drain(svc, current, params, found)
        room = capacity.project(evicted, svc.kube.list_nodes(), svc.kube.list_all_pods(),
                                {node, *params.leaving})
        pending = [as_object(p) for p in as_list(room["pending"])]
        if pending:
            found.warnings.append(f"{len(pending)} evicted pod(s) would stay Pending: "
                                  + "; ".join(f"{p['pod']}: {p['reason']}" for p in pending))
        out["capacity"] = room
    out["etcd"] = [_etcd(svc, node, c, found, params.leaving) for c in clusters
                   if c.may_have_member_on(node)]
    return out
