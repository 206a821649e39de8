"""Where a new pod goes: a Ready, uncordoned node matching its nodeSelector, least loaded."""

from __future__ import annotations

import secrets
from collections import Counter
from typing import TYPE_CHECKING, Any

from sitesim.kubeapi.resources import BY_GROUP_PLURAL

if TYPE_CHECKING:
    from sitesim.kubeapi.state import ClusterState as KubeCluster

Obj = dict[str, Any]
NODES = BY_GROUP_PLURAL[("", "nodes")]
PODS = BY_GROUP_PLURAL[("", "pods")]
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix() -> str:
    """The five-character suffix controllers append to generated pod names."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(5))


def selector_fits(spec: Obj, node: Obj) -> bool:
    """True when the node carries the pod's nodeSelector labels and fits its node affinity."""
    labels = node["metadata"].get("labels") or {}
    wanted = spec.get("nodeSelector") or {}
    if not all(labels.get(k) == v for k, v in wanted.items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(_term_fits(t, labels) for t in terms)


def tolerates(spec: Obj, taint: Obj) -> bool:
    """Whether one of the pod spec's tolerations matches the taint (key, value, effect)."""
    for tol in spec.get("tolerations") or []:
        if tol.get("effect") not in (None, "", taint.get("effect")):
            continue
        if not tol.get("key"):
            if tol.get("operator") == "Exists":
                return True
            continue
        if tol.get("key") == taint.get("key") and (
                tol.get("operator") == "Exists" or tol.get("value", "") == taint.get("value", "")):
            return True
    return False


def repels(spec: Obj, node: Obj) -> bool:
    """The node has a NoSchedule or NoExecute taint the pod spec does not tolerate."""
    return any(t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(spec, t)
               for t in (node.get("spec") or {}).get("taints") or [])


def _term_fits(term: Obj, labels: dict[str, str]) -> bool:
    for expr in term.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        value = labels.get(str(key))
        ok = {"In": value in values, "NotIn": value not in values,
              "Exists": value is not None, "DoesNotExist": value is None}.get(str(op), False)
        if not ok:
            return False
    return True


def pick_node(cluster: KubeCluster, spec: Obj, siblings: list[Obj]) -> str | None:
    """The best node for a new pod whose controller already runs `siblings`."""
    per_node_siblings = Counter(p["spec"].get("nodeName") for p in siblings)
    per_node_total = Counter(p["spec"].get("nodeName") for p in cluster.store.iter(PODS))
    candidates = [
        n["metadata"]["name"] for n in cluster.store.iter(NODES)
        if cluster.node_is_schedulable(n) and selector_fits(spec, n)
    ]
    if not candidates:
        return None
    best: str = min(candidates, key=lambda n: (per_node_siblings[n], per_node_total[n], n))
    return best
