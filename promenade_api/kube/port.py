"""The KubePort interface: every Kubernetes call Promenade makes, and the errors it raises.

    KubeApiError (500)
    ├── KubeUnavailable   the API server could not be reached or timed out
    ├── KubeNotFound      the object does not exist
    └── KubeConflict      a write raced another (409 from the API)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Protocol

from common.errors import BerthError
from promenade_api.kube.budget import Budget
from promenade_api.kube.model import EvictResult, Lease, Node, Pod


class KubeApiError(BerthError):
    code, reason, title, retry = 500, "KubernetesError", "Kubernetes API error", True


class KubeUnavailable(KubeApiError):
    reason, title = "KubernetesUnavailable", "Kubernetes API unreachable"


class KubeNotFound(KubeApiError):
    code, reason, title, retry = 404, "NotFound", "Not found", False


class KubeConflict(KubeApiError):
    code, reason, title, retry = 409, "Conflict", "Conflict", False


class KubePort(Protocol):
    """Kubernetes as Promenade sees it; implemented over the client and by a fake."""

    def ping(self) -> str:
        """The API server's version string; raises KubeUnavailable."""

    def get_node(self, name: str) -> Node:
        """The node, or KubeNotFound."""

    def patch_node(self, name: str, *, labels: Mapping[str, str | None] | None = None,
                   annotations: Mapping[str, str | None] | None = None,
                   unschedulable: bool | None = None) -> Node:
        """Merge-patch labels/annotations (None removes a key) and spec.unschedulable."""

    def add_taint(self, name: str, taint: Mapping[str, str]) -> Node:
        """Add (or update, by key and effect) one taint of the node."""

    def remove_taint(self, name: str, key: str, effect: str,
                     annotations: Mapping[str, str | None] | None = None) -> Node:
        """Remove one taint (by key and effect) and merge-patch these annotations in the
        same write, at the resourceVersion the taints were read from."""

    def list_pods(self, node: str) -> list[Pod]:
        """Every pod bound to the node, in all namespaces."""

    def list_nodes(self) -> list[Node]:
        """Every node of the cluster (a plan's capacity check)."""

    def list_all_pods(self) -> list[Pod]:
        """Every pod of the cluster, in all namespaces (a plan's capacity check)."""

    def list_budgets(self) -> list[Budget]:
        """Every PodDisruptionBudget, in all namespaces, with its status."""

    def owner_exists(self, kind: str, namespace: str, name: str) -> bool:
        """Whether a DaemonSet (the only kind asked about) still exists."""

    def evict(self, pod: Pod, grace_period: int | None) -> EvictResult:
        """POST the policy/v1 Eviction of the pod."""

    def delete_pod(self, pod: Pod, grace_period: int | None) -> EvictResult:
        """Plain DELETE of the pod (terminal pods, or an API without eviction)."""

    def wait_pods_gone(self, node: str, uids: Collection[str], timeout: float) -> set[str]:
        """Wait until none of these pod UIDs exists on the node; the UIDs still there."""

    def delete_node(self, name: str) -> None:
        """DELETE the Node object; KubeNotFound when it is already gone."""

    def watch_node(self, name: str, version: str, timeout: float) -> bool:
        """Wait until the Node changes after resourceVersion `version` (or is deleted), at
        most `timeout` seconds (a watch); True when it changed. Never raises: on an API error
        it waits `timeout` and answers True (look again)."""

    def watch_budgets(self, namespace: str | None, version: str, timeout: float,
                      wake: Callable[[Budget], bool]) -> str:
        """Watch the PodDisruptionBudgets of `namespace` (of all namespaces when None): from
        resourceVersion `version`, or from their current states when it is "", pass each
        state seen to `wake` until it answers True or `timeout` seconds have passed (a
        deleted budget is passed with `gone`). The resourceVersion to go on from; "" to start
        again from the current states. Never raises: on an API error it waits out `timeout`
        and answers ""."""

    def get_lease(self, namespace: str, name: str) -> Lease | None:
        """The Lease, or None."""

    def create_lease(self, namespace: str, lease: Lease) -> Lease:
        """Create; KubeConflict when it already exists."""

    def update_lease(self, namespace: str, lease: Lease) -> Lease:
        """Replace at `lease.version`; KubeConflict when someone else wrote it since."""
