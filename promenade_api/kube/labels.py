"""Node labels: clear all but the kept ones, replace them (PUT node-labels), match selectors."""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypedDict

from common.errors import BadRequest
from common.jsontypes import JSON, JSONObject, as_list
from common.poll import NotYet, poll
from common.status import simple_message
from promenade_api.errors import ClearLabelsError
from promenade_api.kube.model import Pod
from promenade_api.kube.port import KubePort

LOG = logging.getLogger(__name__)
DECOMMISSION_LABEL = "promenade-decomission"
# Spec 002: lock holders watch the maintenance label; clear-labels never removes it (the node
# keeps it until it is back in service: relabelled with its design labels, or a new Node).
MAINTENANCE_LABELS = ("maintenance.berth.io/*", "maintenance.yaook.cloud/*")
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_kubernetes_label(key: str) -> bool:
    """Keys in the kubernetes.io namespaces (kubernetes.io/*, node-role.kubernetes.io/*, ...)."""
    prefix = key.split("/", 1)[0] if "/" in key else ""
    return prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io") \
        or prefix == "k8s.io" or prefix.endswith(".k8s.io")


def kept(key: str, keep: Sequence[str]) -> bool:
    return is_kubernetes_label(key) or any(fnmatch.fnmatchcase(key, p)
                                           for p in (*keep, *MAINTENANCE_LABELS))


def label_problems(labels: object) -> list[str]:
    """Every reason these labels are not valid Kubernetes labels."""
    if not isinstance(labels, dict):
        return ["The body must be a JSON object mapping label keys to string values"]
    problems = []
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if not _NAME.match(name) or (prefix and (len(prefix) > 253 or not _PREFIX.match(prefix))):
            problems.append(f"Invalid label key {key!r}")
        if not isinstance(value, str):
            problems.append(f"Label {key!r}: value must be a string, not {type(value).__name__}")
        elif value and not _NAME.match(value):
            problems.append(f"Label {key!r}: invalid value {value!r}")
    return problems


def _expr_matches(expr: JSONObject, labels: Mapping[str, str]) -> bool:
    key, op = str(expr.get("key", "")), str(expr.get("operator", ""))
    values = [str(v) for v in as_list(expr.get("values"))]
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def pod_fits(pod: Pod, labels: Mapping[str, str]) -> bool:
    """Whether the node's labels still satisfy the pod's nodeSelector and required affinity."""
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if not pod.node_affinity_terms:
        return True
    return any(all(_expr_matches(e, labels) for e in term.get("matchExpressions") or [])
               for term in pod.node_affinity_terms)


class LabelsCleared(TypedDict):
    """The answer of clear-labels: the labels removed and those left."""

    node: str
    removed_labels: list[str]
    labels: dict[str, str]


class LabelsReplaced(TypedDict):
    """The answer of PUT labels: the node's labels now, and the keys set and removed."""

    node: str
    labels: dict[str, str]
    added: list[str]
    removed: list[str]


class LabelManager:
    """Clear-labels and PUT node-labels on one KubePort."""

    def __init__(self, kube: KubePort, keep: Sequence[str], *, clock: Callable[[], float],
                 sleep: Callable[[float], None], poll_interval: float,
                 agent: Callable[[Pod], bool] = lambda pod: False) -> None:
        self._kube, self._keep = kube, list(keep)
        self._agent = agent  # per-node agents leave when their operators say (agents.py)
        self._clock, self._sleep, self._poll = clock, sleep, poll_interval

    def clear(self, node: str, timeout: int) -> LabelsCleared:
        """Remove every non-kept label, then wait for pods that no longer fit to leave."""
        if timeout < 0:
            raise BadRequest(f"timeout must not be negative, not {timeout}")
        current = self._kube.get_node(node)
        removed = sorted(k for k in current.labels if not kept(k, self._keep))
        LOG.info("clear-labels %s: removing %s", node, ", ".join(removed) or "nothing")
        labels = dict(current.labels)
        if removed:
            labels = dict(self._kube.patch_node(node, labels={k: None for k in removed}).labels)
        misfits = self._wait_for_misfits(node, labels, self._clock() + timeout)
        if misfits:
            raise ClearLabelsError(
                f"Pods on {node} that no longer match its labels did not leave in {timeout}s",
                messages=[simple_message(f"Pod {p} still on {node}; its node selector or "
                                         "affinity no longer matches", pod=p) for p in misfits],
                details={"node": node, "removed_labels": removed, "remaining_pods": misfits})
        return {"node": node, "removed_labels": removed, "labels": labels}

    def _wait_for_misfits(self, node: str, labels: Mapping[str, str],
                          deadline: float) -> list[str]:
        def left() -> list[str] | NotYet[list[str]]:
            misfits = sorted(p.key for p in self._kube.list_pods(node)
                             if not p.terminal and not self._agent(p)
                             and not pod_fits(p, labels))
            return NotYet(misfits) if misfits else misfits

        return poll(left, deadline=deadline, interval=self._poll, expire=lambda m: m,
                    between=lambda m: LOG.info("clear-labels %s: waiting for %d pod(s) to "
                                               "leave", node, len(m)),
                    clock=self._clock, sleep=self._sleep)

    def replace(self, node: str, wanted: JSON) -> LabelsReplaced:
        """PUT semantics: the node ends with exactly `wanted` plus its kubernetes.io labels."""
        problems = label_problems(wanted)
        if problems or not isinstance(wanted, dict):  # not a dict: a problem said so
            raise BadRequest("Invalid node labels",
                             messages=[simple_message(p) for p in problems])
        current = self._kube.get_node(node)
        patch: dict[str, str | None] = {
            k: None for k in current.labels if k not in wanted and not is_kubernetes_label(k)}
        patch.update({k: str(v) for k, v in wanted.items() if current.labels.get(k) != v})
        labels = dict(current.labels)
        if patch:
            labels = dict(self._kube.patch_node(node, labels=patch).labels)
        added = sorted(k for k, v in patch.items() if v is not None)
        removed = sorted(k for k, v in patch.items() if v is None)
        LOG.info("node-labels %s: set %s, removed %s", node, added, removed)
        return {"node": node, "labels": labels, "added": added, "removed": removed}
