"""What blocks a drain, by name: each PodDisruptionBudget (with its disruptionsAllowed now) or
eviction lock (annotation and holder) and the pods it holds on the node; and the pods deleted
past a budget an operator named (`disrupt-pdbs`), each with when and by whose leave."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from common.clients.generated.promenade import DisruptedPod, DrainBlocker
from common.disruption import Leave
from promenade_api.kube.budget import Budget
from promenade_api.kube.model import Pod

LOG = logging.getLogger(__name__)


def budget_blocker(key: str, pods: Iterable[str], status: Budget | None) -> DrainBlocker:
    """A PodDisruptionBudget holding pods back (status: as read now; None when unknown)."""
    out: DrainBlocker = {"kind": "PodDisruptionBudget", "name": key,
                         "disruptions_allowed": None, "pods": sorted(pods)}
    if status is not None:
        out["disruptions_allowed"] = status.disruptions_allowed
        out["current_healthy"] = status.current_healthy
        out["desired_healthy"] = status.desired_healthy
        out["expected_pods"] = status.expected_pods
    return out


def lock_blocker(annotation: str, holder: str, pods: Iterable[str]) -> DrainBlocker:
    return {"kind": "EvictionLock", "annotation": annotation, "holder": holder.strip(),
            "pods": sorted(pods)}


def describe(blocker: DrainBlocker) -> str:
    pods = ", ".join(blocker["pods"][:20]) + (
        f" and {len(blocker['pods']) - 20} more" if len(blocker["pods"]) > 20 else "")
    if blocker["kind"] == "EvictionLock":
        by = f" by {blocker['holder']}" if blocker["holder"] else ""
        return f"Eviction lock {blocker['annotation']} held{by} holds back {pods}"
    allowed = blocker["disruptions_allowed"]
    now = "unknown" if allowed is None else str(allowed)
    return (f"PodDisruptionBudget {blocker['name']} (disruptionsAllowed {now}) refuses "
            f"the eviction of {pods}")


def budgets_now(list_budgets: Callable[[], list[Budget]], keys: Iterable[str]
                ) -> dict[str, Budget]:
    """The current state of these budgets (none when they cannot be read)."""
    wanted = set(keys)
    if not wanted:
        return {}
    try:
        return {b.key: b for b in list_budgets() if b.key in wanted}
    except Exception as exc:  # naming a blocker never fails the drain
        LOG.info("could not read PodDisruptionBudgets: %s", exc)
        return {}


@dataclass
class Bypass:
    """One drain's use of an operator's leave: when each named budget first refused, which
    pods were deleted past it (pod, budget, at, allowed_by), and for whom."""

    leave: Leave | None
    operator: str
    clock: Callable[[], float]
    wall: Callable[[], float]
    first_refused: dict[str, float] = field(default_factory=dict)
    deleted: list[DisruptedPod] = field(default_factory=list)

    def named(self, key: str) -> bool:
        return self.leave is not None and key in self.leave.budgets

    def refused(self, key: str) -> None:
        if self.named(key):
            self.first_refused.setdefault(key, self.clock())

    def due(self, key: str) -> float | None:
        """When pods of a named budget that still refuses may be deleted (None: never)."""
        if self.leave is None or key not in self.first_refused:
            return None
        return self.first_refused[key] + self.leave.after

    def ripe(self, key: str) -> bool:
        due = self.due(key)
        return due is not None and self.clock() >= due

    def next_due(self, keys: Sequence[str]) -> float | None:
        dues = [d for k in keys if (d := self.due(k)) is not None]
        return min(dues) if dues else None

    def record(self, node: str, pod: Pod, key: str, status: Budget | None) -> DisruptedPod:
        entry: DisruptedPod = {"pod": pod.key, "budget": key, "node": node, "at": self.wall(),
                 "allowed_by": self.operator,
                 "disruptions_allowed": None if status is None else status.disruptions_allowed}
        assert self.leave is not None
        LOG.warning("drain %s: PodDisruptionBudget %s still refuses after %ss: deleting %s "
                    "(disruption allowed by %s)", node, key, self.leave.after, pod.key,
                    self.operator)
        self.deleted.append(entry)
        return entry
