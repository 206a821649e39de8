"""Shut a node's kubelet down by labelling it for the kubelet-shutdown DaemonSet, and wait."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypedDict

from common.poll import NotYet, poll
from common.status import simple_message
from promenade_api.errors import ShutdownKubeletError
from promenade_api.kube.labels import DECOMMISSION_LABEL
from promenade_api.kube.port import KubeApiError, KubeNotFound, KubePort

LOG = logging.getLogger(__name__)


class KubeletStopped(TypedDict):
    """The answer of shutdown-kubelet: how the stop was seen."""

    node: str
    evidence: str


class KubeletStopper:
    """Sets `promenade-decomission: enabled`; done when Ready is Unknown or the pod finished."""

    def __init__(self, kube: KubePort, *, pod_label: tuple[str, str],
                 clock: Callable[[], float], sleep: Callable[[float], None],
                 poll_interval: float) -> None:
        self._kube, self._pod_label = kube, pod_label
        self._clock, self._sleep, self._poll = clock, sleep, poll_interval

    def shutdown(self, node: str, timeout: int) -> KubeletStopped:
        self._kube.get_node(node)
        LOG.info("shutdown-kubelet %s: setting %s=enabled", node, DECOMMISSION_LABEL)
        try:
            self._kube.patch_node(node, labels={DECOMMISSION_LABEL: "enabled"})
        except KubeNotFound:
            raise
        except KubeApiError as exc:
            raise ShutdownKubeletError(f"Could not label {node}: {exc.message}") from exc
        seen = ""  # the node's version at the last check

        def stopped() -> KubeletStopped | NotYet[None]:
            nonlocal seen
            how, seen = self._stopped(node)
            if not how:
                return NotYet()
            LOG.info("shutdown-kubelet %s: kubelet stopped (%s)", node, how)
            return {"node": node, "evidence": how}

        def wait(seconds: float) -> None:
            if seen:  # woken as soon as the node changes (its Ready condition turns)
                self._kube.watch_node(node, seen, seconds)
            else:
                self._sleep(seconds)

        def still_running(_: None) -> KubeletStopped:
            raise ShutdownKubeletError(
                f"The kubelet of {node} did not stop within {timeout}s",
                messages=[simple_message(
                    f"{node} still reports Ready and no kubelet-shutdown pod finished; "
                    "is the kubelet-shutdown DaemonSet deployed and schedulable there?")],
                details={"node": node})

        return poll(stopped, deadline=self._clock() + timeout, interval=self._poll,
                    expire=still_running, clock=self._clock, sleep=wait)

    def _stopped(self, node: str) -> tuple[str, str]:
        """How we know the kubelet stopped ("" while it runs), and the node's version."""
        try:
            current = self._kube.get_node(node)
            pods = self._kube.list_pods(node)
        except KubeNotFound:
            return "node object gone", ""
        except KubeApiError as exc:
            LOG.info("shutdown-kubelet %s: API error while waiting: %s", node, exc.message)
            return "", ""
        if current.ready == "Unknown":
            return "Ready condition Unknown", current.version
        key, value = self._pod_label
        for pod in pods:
            if pod.labels.get(key) == value and pod.phase == "Succeeded":
                return f"pod {pod.key} completed", current.version
        return "", current.version
