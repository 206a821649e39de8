"""PodDisruptionBudget arithmetic and the eviction decision (as the disruption controller)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sitesim.kubeapi.factories import controller_of, is_pod_ready
from sitesim.kubeapi.selectors import label_selector_from_object, matches

Obj = dict[str, Any]
# Looks up a controller's desired replica count: (kind, namespace, name) -> replicas or None.
ScaleLookup = Callable[[str, str, str], int | None]


@dataclass(frozen=True)
class Budget:
    """The numbers a PDB's status reports."""

    current_healthy: int
    desired_healthy: int
    disruptions_allowed: int
    expected_pods: int


def pods_of(pdb: Obj, pods: Iterable[Obj]) -> list[Obj]:
    """Pods in the PDB's namespace selected by its selector (an empty selector: none)."""
    selector = label_selector_from_object((pdb.get("spec") or {}).get("selector"))
    namespace = pdb["metadata"].get("namespace")
    return [p for p in pods if p["metadata"].get("namespace") == namespace and selector
            and matches(selector, p["metadata"].get("labels"))]


def scaled(value: int | str, total: int, round_up: bool) -> int:
    """An IntOrString resolved against `total` (percentages rounded up or down)."""
    if isinstance(value, int):
        return value
    fraction = int(value.rstrip("%")) * total / 100
    return math.ceil(fraction) if round_up else math.floor(fraction)


def _expected(pods: list[Obj], scale: ScaleLookup) -> int:
    controllers: dict[tuple[str, str, str], int] = {}
    for pod in pods:
        ref = controller_of(pod)
        if ref is None:
            return len(pods)
        key = (ref["kind"], pod["metadata"]["namespace"], ref["name"])
        if key not in controllers:
            replicas = scale(*key)
            if replicas is None:
                return len(pods)
            controllers[key] = replicas
    return sum(controllers.values())


def compute_budget(pdb: Obj, pods: Iterable[Obj], scale: ScaleLookup) -> Budget:
    """The disruption controller's arithmetic for one PDB."""
    selected = [p for p in pods_of(pdb, pods)
                if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    spec = pdb.get("spec") or {}
    healthy = sum(1 for p in selected if is_pod_ready(p))
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if isinstance(min_available, int) and max_unavailable is None:
        expected = len(selected)
        desired = min_available
    else:
        expected = _expected(selected, scale)
        if min_available is not None:
            desired = scaled(min_available, expected, round_up=True)
        else:
            desired = max(0, expected - scaled(max_unavailable or 0, expected, round_up=True))
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return Budget(healthy, desired, allowed, expected)


def status_of(budget: Budget, generation: int, now: str, previous: Obj | None) -> Obj:
    """A PodDisruptionBudgetStatus for `budget` (transition time kept while unchanged)."""
    allowed = budget.disruptions_allowed > 0
    reason = "SufficientPods" if allowed else "InsufficientPods"
    flag = "True" if allowed else "False"
    old = next((c for c in (previous or {}).get("conditions") or []
                if c.get("type") == "DisruptionAllowed"), None)
    since = old["lastTransitionTime"] if old and old.get("status") == flag else now
    return {
        "currentHealthy": budget.current_healthy,
        "desiredHealthy": budget.desired_healthy,
        "disruptionsAllowed": budget.disruptions_allowed,
        "expectedPods": budget.expected_pods,
        "observedGeneration": generation,
        "conditions": [{"type": "DisruptionAllowed", "status": flag, "reason": reason,
                        "message": "", "observedGeneration": generation,
                        "lastTransitionTime": since}],
    }


def violation_message(pdb: Obj, budget: Budget) -> str:
    """The cause kube-apiserver gives when an eviction would break a budget."""
    return (f"The disruption budget {pdb['metadata']['name']} needs "
            f"{budget.desired_healthy} healthy pods and has {budget.current_healthy} currently")
