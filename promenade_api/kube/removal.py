"""Remove a node from Kubernetes, refusing (409) unless it is cordoned, empty and unlabelled."""

from __future__ import annotations

import logging
from typing import TypedDict

from common.status import simple_message
from promenade_api.errors import DeleteNodeError, NodeNotDrained
from promenade_api.kube.drain import DrainSettings, plan_drain
from promenade_api.kube.labels import DECOMMISSION_LABEL, kept
from promenade_api.kube.port import KubeApiError, KubeNotFound, KubePort

LOG = logging.getLogger(__name__)


def removal_problems(kube: KubePort, node: str, settings: DrainSettings) -> list[str]:
    """Why the node may not be deleted yet (empty when it may)."""
    current = kube.get_node(node)
    problems = []
    if not current.unschedulable:
        problems.append(f"{node} is not cordoned (drain it first)")
    plan = plan_drain(kube.list_pods(node), settings,
                      lambda ns, name: kube.owner_exists("DaemonSet", ns, name))
    left = sorted(p.key for p in plan.evict + plan.hold)
    if left:
        problems.append(f"{node} still runs evictable pods: {', '.join(left)}")
    extra = sorted(k for k in current.labels  # the maintenance labels stay to the end
                   if k != DECOMMISSION_LABEL and not kept(k, ()))
    if extra:
        problems.append(f"{node} still has labels: {', '.join(extra)} (clear them first)")
    return problems


class NodeRemoved(TypedDict):
    """The answer of remove-from-cluster."""

    node: str
    deleted: bool


def remove_from_cluster(kube: KubePort, node: str, settings: DrainSettings) -> NodeRemoved:
    problems = removal_problems(kube, node, settings)
    if problems:
        raise NodeNotDrained(f"{node} cannot be removed from the cluster",
                             messages=[simple_message(p) for p in problems])
    LOG.info("remove-from-cluster %s: deleting the Node", node)
    try:
        kube.delete_node(node)
    except KubeNotFound:
        LOG.info("remove-from-cluster %s: already gone", node)
    except KubeApiError as exc:
        raise DeleteNodeError(f"Kubernetes refused to delete {node}",
                              messages=[simple_message(exc.message)]) from exc
    return {"node": node, "deleted": True}
