"""Drain progress: the pods still on a node, grouped by why they are still there.

A drain publishes this record on the Node itself (annotation `PROGRESS_ANNOTATION`, JSON) each
time it changes, so every Promenade process, and through them Shipyard, can read how a drain
that another process runs is getting on (as Cluster API reports a drain's blocking pods
grouped by the error that holds them).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping

from common.clients.generated.promenade import DisruptedPod, DrainBlocker
from common.clients.promenade import DrainProgress as DrainRecord

LOG = logging.getLogger(__name__)
PROGRESS_ANNOTATION = "berth.io/drain-progress"
MAX_PODS_PER_GROUP = 20  # the record stays small: annotations share a 256 KiB budget
TERMINATING = "terminating: evicted, waiting for the pod to exit"
HOLD = "eviction hold: evicted last, once every other pod has left"
WAITING = "waiting to be evicted"
_BUDGET = re.compile(r"The disruption budget (\S+) needs (\d+) healthy pods? and has (\d+)")
_BUDGET_OTHER = re.compile(r"The disruption budget (\S+) does not allow evicting pods")

Publish = Callable[[Mapping[str, object]], None]


def refusal_reason(message: str) -> str:
    """A short reason for a refused (429) eviction; PDB refusals name the budget."""
    match = _BUDGET.search(message)
    if match:
        name, needs, has = match.groups()
        return (f"PDB {name} allows 0 disruptions (needs {needs} healthy pods, "
                f"has {has})")
    match = _BUDGET_OTHER.search(message)
    if match:
        return f"PDB {match.group(1)} allows no disruption now"
    return f"eviction refused: {message}" if message else "eviction refused"


def lock_reason(key: str, holder: str) -> str:
    holder = holder.strip()
    if len(holder) > 80:
        holder = holder[:77] + "..."
    return f"eviction lock {key} held" + (f" by {holder}" if holder else "")


class DrainProgress:
    """The reason each remaining pod is still on the node; publishes on every change."""

    def __init__(self, node: str, marker: str | None, started_at: float,
                 wall: Callable[[], float], publish: Publish) -> None:
        self._node, self._marker, self._started = node, marker, started_at
        self._wall, self._publish = wall, publish
        self._reasons: dict[str, str] = {}
        self._phase = "starting"
        self._removed = 0
        self._blockers: list[DrainBlocker] = []
        self._disrupted: list[DisruptedPod] = []
        self._last: dict[str, object] | None = None

    def set(self, pods: Iterable[str], reason: str) -> None:
        for pod in pods:
            self._reasons[pod] = reason

    def gone(self, pods: Iterable[str]) -> None:
        for pod in pods:
            if self._reasons.pop(pod, None) is not None:
                self._removed += 1

    def phase(self, name: str) -> None:
        self._phase = name

    def blockers(self, blockers: list[DrainBlocker]) -> None:
        """What holds the pods back, by name (blockers.py): budgets and locks."""
        self._blockers = [{**b, "pods": b["pods"][:MAX_PODS_PER_GROUP]} for b in blockers]

    def disrupted(self, deleted: list[DisruptedPod]) -> None:
        """The pods deleted past a budget the operator named, with when and by whose leave."""
        self._disrupted = list(deleted[-MAX_PODS_PER_GROUP:])

    def record(self) -> dict[str, object]:
        groups: dict[str, list[str]] = {}
        for pod, reason in sorted(self._reasons.items()):
            groups.setdefault(reason, []).append(pod)
        ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        return {"node": self._node, "marker": self._marker, "phase": self._phase,
                "started_at": self._started, "pods_left": len(self._reasons),
                "removed": self._removed, "blockers": self._blockers,
                "disrupted": self._disrupted,
                "groups": [{"reason": r, "count": len(p), "pods": p[:MAX_PODS_PER_GROUP]}
                           for r, p in ordered]}

    def flush(self) -> None:
        """Publish the record if it changed since the last time (never raises)."""
        record = self.record()
        if record == self._last:
            return
        self._last = record
        try:
            self._publish({**record, "updated_at": self._wall()})
        except Exception as exc:  # progress is informative: it never fails a drain
            LOG.warning("drain %s: could not publish progress: %s", self._node, exc)


def parse(annotations: dict[str, str]) -> DrainRecord | None:
    """The progress record a node carries, or None (absent or unreadable)."""
    raw = annotations.get(PROGRESS_ANNOTATION)
    if not raw:
        return None
    try:
        value: DrainRecord | None = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def encode(record: Mapping[str, object]) -> str:
    return json.dumps(record, separators=(",", ":"), sort_keys=True)
