"""What a plan reads besides pods: resource quantities, label selectors, PodDisruptionBudgets."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

Obj = dict[str, Any]
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX: dict[str, Decimal] = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    **{s: Decimal(10) ** (3 * i) for i, s in enumerate("kMGTPE", 1)},
    **{f"{s}i": Decimal(2) ** (10 * i) for i, s in enumerate("KMGTPE", 1)}}


def quantity(value: object) -> Decimal:
    """A Kubernetes quantity ("250m", "1Gi", "2") as a number; 0 when unreadable."""
    match = _QUANTITY.match(str(value).strip())
    if match is None or match.group(2) not in _SUFFIX:
        return Decimal(0)
    try:
        return Decimal(match.group(1)) * _SUFFIX[match.group(2)]
    except InvalidOperation:
        return Decimal(0)


def millicores(value: object) -> int:
    return int(quantity(value) * 1000)


def byte_count(value: object) -> int:
    return int(quantity(value))


def pod_requests(spec: Obj) -> tuple[int, int]:
    """(CPU millicores, memory bytes) the scheduler counts for a pod: the sum of its
    containers' requests, or the largest init container's when that is larger."""
    def total(containers: list[Obj] | None) -> tuple[int, int]:
        cpu = mem = 0
        for c in containers or []:
            req = ((c or {}).get("resources") or {}).get("requests") or {}
            cpu += millicores(req.get("cpu", 0))
            mem += byte_count(req.get("memory", 0))
        return cpu, mem

    cpu, mem = total(spec.get("containers"))
    for init in spec.get("initContainers") or []:
        i_cpu, i_mem = total([init])
        cpu, mem = max(cpu, i_cpu), max(mem, i_mem)
    return cpu, mem


def selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against labels; an empty or absent selector matches nothing
    (as a policy/v1 PodDisruptionBudget treats it)."""
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget with the numbers its status reports (the disruption
    controller's view: evictions are refused while `disruptions_allowed` is 0)."""

    namespace: str
    name: str
    selector: Obj = field(default_factory=dict)
    min_available: int | str | None = None  # IntOrString
    max_unavailable: int | str | None = None
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    unhealthy_pod_eviction_policy: str = "IfHealthyBudget"
    version: str = ""  # metadata.resourceVersion: each status update is a new one
    settled: bool = True  # the status is of the current spec (observedGeneration)
    gone: bool = False  # a watch saw it deleted
    disrupted: frozenset[str] = frozenset()  # pods evicted, not yet seen leaving (by name)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def allowing(self) -> int:
        """Evictions the Eviction API would grant now by this status (it refuses while the
        status is of an older generation)."""
        return max(0, self.disruptions_allowed) if self.settled else 0

    @property
    def unhealthy(self) -> int:
        return max(0, self.expected_pods - self.current_healthy)

    @property
    def never_allows(self) -> bool:
        """Even with every expected pod healthy the budget allows no disruption."""
        return self.desired_healthy >= self.expected_pods

    @classmethod
    def from_obj(cls, obj: Obj) -> Budget:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        status = obj.get("status") or {}
        generation = int(meta.get("generation") or 0)
        return cls(namespace=str(meta.get("namespace", "default")),
                   name=str(meta.get("name", "")), selector=dict(spec.get("selector") or {}),
                   min_available=spec.get("minAvailable"),
                   max_unavailable=spec.get("maxUnavailable"),
                   disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
                   current_healthy=int(status.get("currentHealthy") or 0),
                   desired_healthy=int(status.get("desiredHealthy") or 0),
                   expected_pods=int(status.get("expectedPods") or 0),
                   unhealthy_pod_eviction_policy=str(spec.get("unhealthyPodEvictionPolicy")
                                                     or "IfHealthyBudget"),
                   version=str(meta.get("resourceVersion") or ""),
                   settled=int(status.get("observedGeneration") or 0) >= generation,
                   disrupted=frozenset(status.get("disruptedPods") or {}))
