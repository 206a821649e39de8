"""Plain views of Kubernetes nodes and pods that the node operations reason about."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from promenade_api.kube.budget import byte_count, millicores, pod_requests

Obj = dict[str, Any]
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


@dataclass(frozen=True)
class Node:
    """The parts of a Node object Promenade uses."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    ready: str = "True"  # the Ready condition's status: True | False | Unknown
    ready_since: str | None = None  # when the Ready condition last changed (RFC 3339)
    taints: tuple[Obj, ...] = ()
    cpu_m: int = 0  # allocatable CPU in millicores
    memory: int = 0  # allocatable memory in bytes
    version: str = ""  # metadata.resourceVersion ("" when unknown: nothing to watch from)

    @classmethod
    def from_obj(cls, obj: Obj) -> Node:
        meta = obj.get("metadata") or {}
        ready, since = "Unknown", None
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Ready":
                ready = str(cond.get("status", "Unknown"))
                since = cond.get("lastTransitionTime")
        spec = obj.get("spec") or {}
        allocatable = (obj.get("status") or {}).get("allocatable") or {}
        return cls(name=str(meta.get("name", "")), labels=dict(meta.get("labels") or {}),
                   annotations=dict(meta.get("annotations") or {}),
                   unschedulable=bool(spec.get("unschedulable")),
                   ready=ready, ready_since=str(since) if since else None,
                   taints=tuple(dict(t) for t in spec.get("taints") or []),
                   cpu_m=millicores(allocatable.get("cpu", 0)),
                   memory=byte_count(allocatable.get("memory", 0)),
                   version=str(meta.get("resourceVersion") or ""))

    def has_taint(self, key: str, effect: str) -> bool:
        return any(t.get("key") == key and t.get("effect") == effect for t in self.taints)


@dataclass(frozen=True)
class OwnerRef:
    kind: str
    name: str
    api_version: str = ""
    controller: bool = False


@dataclass(frozen=True)
class Pod:
    """The parts of a Pod object that drain, clear-labels and removal decide on."""

    namespace: str
    name: str
    uid: str
    node: str = ""
    phase: str = "Running"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owners: tuple[OwnerRef, ...] = ()
    has_empty_dir: bool = False
    deleting: bool = False
    node_selector: dict[str, str] = field(default_factory=dict)
    node_affinity_terms: tuple[Obj, ...] = ()  # required nodeSelectorTerms
    tolerations: tuple[Obj, ...] = ()
    cpu_m: int = 0  # requested CPU in millicores
    memory: int = 0  # requested memory in bytes

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def controller(self) -> OwnerRef | None:
        for ref in self.owners:
            if ref.controller:
                return ref
        return None

    @property
    def is_mirror(self) -> bool:
        return MIRROR_ANNOTATION in self.annotations

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def tolerates(self, taint: Obj) -> bool:
        """Whether a toleration of the pod matches the taint (key, value and effect)."""
        for tol in self.tolerations:
            if tol.get("effect") not in (None, "", taint.get("effect")):
                continue
            exists = tol.get("operator") == "Exists"
            if not tol.get("key"):
                if exists:
                    return True
            elif tol.get("key") == taint.get("key") and (
                    exists or tol.get("value", "") == taint.get("value", "")):
                return True
        return False

    @classmethod
    def from_obj(cls, obj: Obj) -> Pod:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        owners = tuple(
            OwnerRef(kind=str(r.get("kind", "")), name=str(r.get("name", "")),
                     api_version=str(r.get("apiVersion", "")),
                     controller=bool(r.get("controller")))
            for r in meta.get("ownerReferences") or [])
        requests = pod_requests(spec)
        affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or {}
        return cls(
            namespace=str(meta.get("namespace", "default")), name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")), node=str(spec.get("nodeName") or ""),
            phase=str((obj.get("status") or {}).get("phase") or "Pending"),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}), owners=owners,
            has_empty_dir=any("emptyDir" in (v or {}) for v in spec.get("volumes") or []),
            deleting=bool(meta.get("deletionTimestamp")),
            node_selector=dict(spec.get("nodeSelector") or {}),
            node_affinity_terms=tuple(affinity.get("nodeSelectorTerms") or ()),
            tolerations=tuple(dict(t) for t in spec.get("tolerations") or []),
            cpu_m=requests[0], memory=requests[1])


@dataclass(frozen=True)
class EvictResult:
    """What the API answered to one eviction: evicted, retry (429), gone (404), failed."""

    outcome: str  # evicted | retry | gone | failed | unsupported
    message: str = ""
    budget: str = ""  # retry: the PodDisruptionBudget that refused (the pod's namespace)


@dataclass(frozen=True)
class Lease:
    """A coordination.k8s.io Lease as Promenade uses it for mutual exclusion."""

    name: str
    holder: str | None
    renewed_at: float | None  # seconds since the epoch
    duration: int
    version: str = ""
