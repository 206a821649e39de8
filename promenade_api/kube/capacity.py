"""Would the evicted pods fit elsewhere? Their requests against the free allocatable of the
nodes that stay schedulable, placed first-fit largest first (a projection, not the scheduler).

A node counts when it is Ready, not cordoned and not leaving; its free CPU and memory are its
allocatable minus the requests of the pods bound to it that are not finished. A pod fits a
node whose labels satisfy its nodeSelector and required node affinity, whose NoSchedule and
NoExecute taints it tolerates, and which has room for both its CPU and memory requests.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from common.jsontypes import JSON, JSONObject
from promenade_api.kube.labels import pod_fits
from promenade_api.kube.model import Node, Pod

RECREATING = ("ReplicaSet", "StatefulSet", "ReplicationController", "Job")


@dataclass
class Room:
    node: Node
    cpu_m: int
    memory: int

    def takes(self, pod: Pod) -> bool:
        return pod.cpu_m <= self.cpu_m and pod.memory <= self.memory


def _schedulable(node: Node, leaving: Collection[str]) -> bool:
    return node.ready == "True" and not node.unschedulable and node.name not in leaving


def _repels(node: Node, pod: Pod) -> bool:
    return any(t.get("effect") in ("NoSchedule", "NoExecute") and not pod.tolerates(t)
               for t in node.taints)


def rooms(nodes: Sequence[Node], pods: Sequence[Pod], leaving: Collection[str]) -> list[Room]:
    """The free CPU and memory of every node that stays schedulable."""
    used: dict[str, tuple[int, int]] = {}
    for pod in pods:
        if pod.node and not pod.terminal:
            cpu, mem = used.get(pod.node, (0, 0))
            used[pod.node] = (cpu + pod.cpu_m, mem + pod.memory)
    return [Room(n, n.cpu_m - used.get(n.name, (0, 0))[0], n.memory - used.get(n.name, (0, 0))[1])
            for n in nodes if _schedulable(n, leaving)]


def _why_not(pod: Pod, free: list[Room]) -> str:
    fitting = [r for r in free if pod_fits(pod, r.node.labels) and not _repels(r.node, pod)]
    if not free:
        return "no node stays schedulable"
    if not fitting:
        return "no schedulable node matches its nodeSelector, affinity or tolerations"
    return (f"no matching node has {pod.cpu_m}m CPU and {pod.memory} bytes of memory free "
            f"(most free: {max(r.cpu_m for r in fitting)}m CPU, "
            f"{max(r.memory for r in fitting)} bytes)")


def project(evicted: Sequence[Pod], nodes: Sequence[Node], pods: Sequence[Pod],
            leaving: Collection[str]) -> JSONObject:
    """Requests of the evicted pods, the room left, and the pods that would stay Pending."""
    free = rooms(nodes, pods, leaving)
    before: list[JSON] = [{"node": r.node.name, "cpu_m": r.cpu_m, "memory": r.memory}
                          for r in free]
    free_cpu_m, free_memory = sum(r.cpu_m for r in free), sum(r.memory for r in free)
    moving = [p for p in evicted if p.controller and p.controller.kind in RECREATING]
    gone = [p.key for p in evicted if p not in moving]
    pending: list[JSON] = []
    for pod in sorted(moving, key=lambda p: (p.cpu_m, p.memory), reverse=True):
        room = next((r for r in free if pod_fits(pod, r.node.labels)
                     and not _repels(r.node, pod) and r.takes(pod)), None)
        if room is None:
            pending.append({"pod": pod.key, "cpu_m": pod.cpu_m, "memory": pod.memory,
                            "reason": _why_not(pod, free)})
            continue
        room.cpu_m -= pod.cpu_m
        room.memory -= pod.memory
    return {
        "requests": {"cpu_m": sum(p.cpu_m for p in moving),
                     "memory": sum(p.memory for p in moving)},
        "free": {"cpu_m": free_cpu_m, "memory": free_memory},
        "nodes": before,
        "recreated": [*sorted(p.key for p in moving)],
        "not_recreated": [*sorted(gone)],
        "pending": pending,
    }
