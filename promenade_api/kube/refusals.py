"""When a drain tries again an eviction refused with 429: as soon as the refusing budget allows."""

# The Eviction API refuses (429) while the pod's PodDisruptionBudget allows no disruption, and
# grants one eviction per allowed disruption, writing the budget's status each time (allowed
# minus one, the pod added to status.disruptedPods). So the pods a budget refused wait on a
# watch of that budget and go as soon as its status allows: one pod per allowed disruption,
# the next only once a later status allows again. A status written before one of our own
# evictions of the budget (the watch has not yet shown that pod in disruptedPods) is stale
# and lets nothing go. Whatever the watch says, a refused pod is tried again at the latest
# `delay` seconds after its budget last refused (the rule alone when the API is not
# watchable). A 429 naming no budget (e.g. the API server's own rate limit) waits `delay`.

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from promenade_api.kube.budget import Budget
from promenade_api.kube.model import Pod
from promenade_api.kube.port import KubePort

LOG = logging.getLogger(__name__)
MIN_WATCH = 0.2  # a shorter wait sleeps instead of opening a watch
ALL = 1 << 30  # a deleted budget holds no pod back; a refusal spends whatever a state allowed
_UNSET = object()


@dataclass
class Refused:
    pod: Pod
    message: str  # the refusal, naming the budget
    budget: str  # "namespace/name" of the refusing budget; "" when the 429 named none
    due: float  # tried again at the latest then


class Refusals:
    """The refused pods of one drain, the last state seen of their budgets, and the watch."""

    def __init__(self, kube: KubePort, delay: float, clock: Callable[[], float],
                 sleep: Callable[[float], None]) -> None:
        self._kube, self._delay, self._clock, self._sleep = kube, delay, clock, sleep
        self._waiting: dict[str, Refused] = {}  # by pod UID, oldest refusal first
        self._status: dict[str, Budget] = {}  # budget key -> last state seen
        self._used: dict[str, tuple[str, int]] = {}  # budget key -> (version, evictions tried)
        self._taken: dict[str, str] = {}  # pod UID -> budget key, while its try is under way
        self._unseen: dict[str, set[str]] = {}  # budget key -> pods evicted, write not seen
        self._scope: object = _UNSET  # the namespace watched (None: all)
        self._cursor = ""  # the watch's resourceVersion ("" starts from current states)

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def refused(self, pod: Pod, message: str, budget: str) -> None:
        """A 429 for the pod, naming `budget` (in the pod's namespace) or none."""
        now = self._clock()
        key = f"{pod.namespace}/{budget}" if budget else ""
        self._taken.pop(pod.uid, None)
        self._waiting.pop(pod.uid, None)
        self._waiting[pod.uid] = Refused(pod, message, key, now + self._delay)
        if key:  # the state we hold allows no more; the budget's other pods wait as long
            self._spend(key, ALL)
            for other in self._of(key):
                other.due = now + self._delay

    def evicted(self, pod: Pod) -> None:
        """The Eviction API granted a pod this took: its budget's status was written."""
        key = self._taken.pop(pod.uid, "")
        if key:
            self._unseen.setdefault(key, set()).add(pod.name)

    def expire(self, deadline: float | None) -> list[Refused]:
        """Forget and return the pods no retry can reach before `deadline`: those naming no
        budget whose next try is later (None: every pod, the deadline has come)."""
        gone = [r for r in self._waiting.values()
                if deadline is None or (not r.budget and r.due > deadline)]
        for r in gone:
            del self._waiting[r.pod.uid]
        return gone

    def take(self) -> list[Pod]:
        """The pods to try now (forgotten here until refused again): of each budget, one per
        disruption its last state allows beyond those already tried against it, or all of
        them once they are due; of the rest, those due."""
        now = self._clock()
        ready: list[Refused] = []
        for key in dict.fromkeys(r.budget for r in self._waiting.values()):
            group = self._of(key)
            if not key:
                ready += [r for r in group if r.due <= now]
                continue
            count = self._allowance(key)
            if count:  # woken: the others wait for a later state, at most `delay` again
                for later in group[count:]:
                    later.due = max(later.due, now + self._delay)
            elif any(r.due <= now for r in group):
                count = len(group)
            ready += group[:count]
            self._spend(key, min(count, len(group)))
        for r in ready:
            del self._waiting[r.pod.uid]
            if r.budget:
                self._taken[r.pod.uid] = r.budget
        return [r.pod for r in ready]

    def next_due(self) -> float:
        return min(r.due for r in self._waiting.values())

    def blocking(self) -> dict[str, list[Pod]]:
        """The waiting pods by the budget that refused them ("" for a 429 naming none)."""
        out: dict[str, list[Pod]] = {}
        for r in self._waiting.values():
            out.setdefault(r.budget, []).append(r.pod)
        return out

    def release(self, key: str) -> list[Pod]:
        """Take every pod waiting on budget `key` to try now, whatever its state says."""
        ready = self._of(key)
        for r in ready:
            del self._waiting[r.pod.uid]
            self._taken[r.pod.uid] = key
        return [r.pod for r in ready]

    def wait(self, until: float) -> None:
        """Until `until`, or earlier when a waiting pod's budget allows a disruption."""
        timeout = until - self._clock()
        if timeout <= 0:
            return
        namespaces = {r.pod.namespace for r in self._waiting.values() if r.budget}
        if not namespaces or timeout < MIN_WATCH:
            self._sleep(timeout)
            return
        scope = next(iter(namespaces)) if len(namespaces) == 1 else None
        if scope != self._scope:
            self._scope, self._cursor = scope, ""
        if not self._cursor:  # it starts from current states, written after our evictions
            self._unseen.clear()
        self._cursor = self._kube.watch_budgets(scope, self._cursor, timeout, self._seen)

    def _seen(self, budget: Budget) -> bool:
        """A budget's state from the watch: True when it lets a waiting pod go now."""
        self._status[budget.key] = budget
        unseen = self._unseen.get(budget.key)
        if unseen:
            unseen -= budget.disrupted
        return any(r.budget == budget.key for r in self._waiting.values()) and \
            self._allowance(budget.key) > 0

    def _of(self, key: str) -> list[Refused]:
        return [r for r in self._waiting.values() if r.budget == key]

    def _allowance(self, key: str) -> int:
        status = self._status.get(key)
        if status is None:
            return 0
        if status.gone:
            return ALL
        if self._unseen.get(key):  # written before one of our evictions: stale
            return 0
        version, tried = self._used.get(key, ("", 0))
        return max(0, status.allowing - (tried if version == status.version else 0))

    def _spend(self, key: str, count: int) -> None:
        """`count` evictions tried against the last state seen of the budget."""
        status = self._status.get(key)
        version = status.version if status else ""
        if status is not None and status.gone:
            return
        used, tried = self._used.get(key, ("", 0))
        self._used[key] = (version, min(ALL, count + (tried if used == version else 0)))
