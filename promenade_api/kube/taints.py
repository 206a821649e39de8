"""The out-of-service taints Berth applies never outlive their use: removed once the node is
Ready again, or at their deadline, whichever comes first; taints nobody marked are left alone.

The fence (kube.fence) marks its taint with the annotation TAINT_ANNOTATION on the node:
`{"taint": key, "effect": ..., "applied_at": ..., "deadline": ...}` (RFC 3339, UTC). The
taint and the annotation are removed in one write, at the resourceVersion read, by:
- any read of the node by Promenade's node status and watch (a healthy check, a rejoin that
  Shipyard's wait_node_ready sees);
- a periodic sweep of every node (`[fence] sweep_interval`).
An out-of-service taint without Berth's annotation was put there by someone else (an
operator, another remediation tool) and is never touched.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from common.failurelog import FailureLog
from common.jsontypes import JSONObject
from promenade_api.kube.model import Node
from promenade_api.kube.port import KubeApiError, KubeNotFound, KubePort

LOG = logging.getLogger(__name__)
TAINT_ANNOTATION = "berth.io/out-of-service-taint"


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def mark(taint: dict[str, str], now: float, deadline: float) -> dict[str, str]:
    """The annotation that says Berth applied `taint` at `now`, to go by `now + deadline`."""
    return {TAINT_ANNOTATION: json.dumps({
        "taint": taint["key"], "effect": taint["effect"], "applied_at": _iso(now),
        "deadline": _iso(now + deadline), "by": "promenade fence"}, sort_keys=True)}


def berth_taint(node: Node) -> JSONObject | None:
    """Berth's mark on the node (None: no mark, or one that cannot be read)."""
    raw = node.annotations.get(TAINT_ANNOTATION)
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get("taint") else None


def why_remove(node: Node, now: float) -> str | None:
    """Why Berth's taint goes now (None: it stays, or there is none of Berth's)."""
    marked = berth_taint(node)
    if marked is None:
        return None
    if node.ready == "True":
        return "the node is Ready again"
    try:
        deadline = datetime.fromisoformat(str(marked.get("deadline")).replace("Z", "+00:00"))
    except ValueError:
        return "its deadline cannot be read"
    if now >= deadline.timestamp():
        return f"its deadline {marked.get('deadline')} has passed"
    return None


class TaintSweeper:
    """Removes Berth's out-of-service taints that are due (see the module docstring)."""

    def __init__(self, kube: KubePort, wall: Callable[[], float]) -> None:
        self._kube, self._wall = kube, wall

    def check(self, node: Node) -> Node:
        """The node as it is after removing Berth's taint when due (unchanged otherwise)."""
        why = why_remove(node, self._wall())
        if why is None:
            return node
        marked = berth_taint(node) or {}
        try:
            after = self._kube.remove_taint(node.name, str(marked["taint"]),
                                            str(marked.get("effect") or "NoExecute"),
                                            annotations={TAINT_ANNOTATION: None})
        except KubeNotFound:
            return node
        except KubeApiError as exc:  # the next read or sweep tries again
            LOG.warning("Could not remove the %s taint of %s: %s", marked.get("taint"),
                        node.name, exc.message)
            return node
        LOG.info("Removed the %s taint Berth applied to %s: %s", marked["taint"], node.name,
                 why)
        return after

    def sweep(self) -> list[str]:
        """Every node once; the names whose taint was removed."""
        removed = []
        for node in self._kube.list_nodes():
            if berth_taint(node) is not None and berth_taint(self.check(node)) is None:
                removed.append(node.name)
        return removed

    def run(self, interval: float, stopping: threading.Event) -> None:
        # Kubernetes away: its message says enough
        failures = FailureLog(LOG, "Out-of-service taint sweep", quiet=(KubeApiError,))
        while not stopping.wait(interval):
            failures.run(self.sweep)
