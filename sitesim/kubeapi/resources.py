"""The resource types this server knows: names, groups, kinds, scope and verbs."""

from __future__ import annotations

from dataclasses import dataclass

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One REST resource (e.g. pods in group "" version v1)."""

    plural: str
    singular: str
    kind: str
    group: str
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("namespaces", "namespace", "Namespace", "", "v1", False, ("ns",),
                 ("create", "delete", "get", "list", "patch", "update", "watch")),
    ResourceType("nodes", "node", "Node", "", "v1", False, ("no",)),
    ResourceType("pods", "pod", "Pod", "", "v1", True, ("po",), categories=("all",)),
    ResourceType("daemonsets", "daemonset", "DaemonSet", "apps", "v1", True, ("ds",),
                 categories=("all",)),
    ResourceType("replicasets", "replicaset", "ReplicaSet", "apps", "v1", True, ("rs",),
                 categories=("all",)),
    ResourceType("deployments", "deployment", "Deployment", "apps", "v1", True, ("deploy",),
                 categories=("all",)),
    ResourceType("statefulsets", "statefulset", "StatefulSet", "apps", "v1", True, ("sts",),
                 categories=("all",)),
    ResourceType("poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget",
                 "policy", "v1", True, ("pdb",)),
    ResourceType("leases", "lease", "Lease", "coordination.k8s.io", "v1", True),
)

# Subresources advertised in discovery: (parent plural, subresource, group, version, kind, verbs)
SUBRESOURCES: tuple[tuple[str, str, str, str, str, tuple[str, ...]], ...] = (
    ("pods", "eviction", "policy", "v1", "Eviction", ("create",)),
    ("pods", "status", "", "v1", "Pod", ("get", "patch", "update")),
    ("nodes", "status", "", "v1", "Node", ("get", "patch", "update")),
    ("namespaces", "status", "", "v1", "Namespace", ("get", "patch", "update")),
    ("daemonsets", "status", "apps", "v1", "DaemonSet", ("get", "patch", "update")),
    ("replicasets", "status", "apps", "v1", "ReplicaSet", ("get", "patch", "update")),
    ("deployments", "status", "apps", "v1", "Deployment", ("get", "patch", "update")),
    ("statefulsets", "status", "apps", "v1", "StatefulSet", ("get", "patch", "update")),
    ("poddisruptionbudgets", "status", "policy", "v1", "PodDisruptionBudget",
     ("get", "patch", "update")),
)

BY_KIND: dict[str, ResourceType] = {r.kind: r for r in RESOURCES}
BY_GROUP_PLURAL: dict[tuple[str, str], ResourceType] = {(r.group, r.plural): r for r in RESOURCES}
GROUP_VERSIONS: tuple[tuple[str, str], ...] = tuple(
    dict.fromkeys((r.group, r.version) for r in RESOURCES))


def lookup(group: str, version: str, plural: str) -> ResourceType | None:
    """The resource served at /api(s)/<group>/<version>/<plural>, if any."""
    res = BY_GROUP_PLURAL.get((group, plural))
    return res if res is not None and res.version == version else None


def for_manifest(api_version: str, kind: str) -> ResourceType | None:
    """The resource for a manifest's apiVersion and kind, if supported."""
    res = BY_KIND.get(kind)
    return res if res is not None and res.api_version == api_version else None
