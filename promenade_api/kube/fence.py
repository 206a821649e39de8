"""Fence-first pod removal: Kubernetes non-graceful node shutdown for a powered-off node.

Only for a node whose power-off the caller has confirmed at its BMC: the out-of-service taint
makes the control plane delete the node's pods at once (no kubelet has to confirm), which is
unsafe on a node that may still be running them. The node gets the maintenance signal first
(the drain's labels), so operators of per-node agents (spec 002) stop placing their agents
there and release their locks instead of recreating what the taint removes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TypedDict

from common.poll import NotYet, poll
from common.status import simple_message
from promenade_api.errors import DrainNodeError
from promenade_api.kube import taints
from promenade_api.kube.port import KubePort
from promenade_api.kube.progress import DrainProgress

FENCED = "out-of-service taint: waiting for the control plane to delete the pod"

LOG = logging.getLogger(__name__)
OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
                  "effect": "NoExecute"}


class Fenced(TypedDict):
    """The answer of a fence: the pods the taint removed and those tolerating it."""

    node: str
    taint: str
    removed: list[str]
    tolerating: list[str]


class Fencer:
    """Cordon, taint out-of-service, and wait until every pod not tolerating it is gone."""

    def __init__(self, kube: KubePort, *, clock: Callable[[], float],
                 sleep: Callable[[float], None], poll_interval: float,
                 check: Callable[[], None] = lambda: None,
                 progress: Callable[[str], DrainProgress] | None = None,
                 signal: Mapping[str, str] | None = None,
                 wall: Callable[[], float] | None = None, taint_deadline: float = 3600.0
                 ) -> None:
        self._kube, self._clock, self._sleep = kube, clock, sleep
        self._wall, self._deadline = wall or clock, taint_deadline
        self._signal = dict(signal or {})
        self._poll, self._check = poll_interval, check
        self._progress_of = progress or (lambda node: DrainProgress(
            node, None, 0.0, lambda: 0.0, lambda record: None))

    def run(self, node: str, timeout: int) -> Fenced:
        progress = self._progress_of(node)
        progress.phase("fencing")
        try:
            result = self._run(node, timeout, progress)
            progress.phase("done")
            return result
        except BaseException:
            progress.phase("failed")
            raise
        finally:
            progress.flush()

    def _run(self, node: str, timeout: int, progress: DrainProgress) -> Fenced:
        current = self._kube.get_node(node)
        before = {p.key for p in self._kube.list_pods(node)}
        missing = {k: v for k, v in self._signal.items() if current.labels.get(k) != v}
        if missing or not current.unschedulable:
            LOG.info("fence %s: cordoning and setting %s", node,
                     ", ".join(f"{k}={v}" for k, v in missing.items()) or "no label")
            self._kube.patch_node(node, labels=missing or None, unschedulable=True)
        if not current.has_taint(OUT_OF_SERVICE["key"], OUT_OF_SERVICE["effect"]):
            LOG.info("fence %s: tainting %s (Berth's, removed once the node is Ready or "
                     "after %g s)", node, OUT_OF_SERVICE["key"], self._deadline)
            self._kube.patch_node(node, annotations=taints.mark(OUT_OF_SERVICE, self._wall(),
                                                                self._deadline))
            self._kube.add_taint(node, OUT_OF_SERVICE)

        def removed() -> Fenced | NotYet[list[str]]:
            pods = self._kube.list_pods(node)
            left = sorted(p.key for p in pods if not p.tolerates(OUT_OF_SERVICE))
            progress.gone(set(before) - set(left))
            progress.set(left, FENCED)
            progress.flush()
            if left:
                return NotYet(left)
            staying = sorted(p.key for p in pods)
            return {"node": node, "taint": OUT_OF_SERVICE["key"],
                    "removed": sorted(before - set(staying)), "tolerating": staying}

        def late(left: list[str]) -> Fenced:
            raise DrainNodeError(
                f"Pods of {node} were not removed within {timeout}s of the "
                f"{OUT_OF_SERVICE['key']} taint",
                messages=[simple_message(f"Pod {p} still on {node}", pod=p) for p in left],
                details={"node": node, "remaining_pods": left})

        return poll(removed, deadline=self._clock() + timeout, interval=self._poll,
                    expire=late, between=lambda _: self._check(), clock=self._clock,
                    sleep=self._sleep)
