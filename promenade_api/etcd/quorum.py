"""Quorum arithmetic: may these members leave without breaking the cluster? (pure)"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from promenade_api.etcd.model import MemberHealth


def quorum(size: int) -> int:
    """Members needed for a majority of a cluster of `size`."""
    return size // 2 + 1


@dataclass(frozen=True)
class Projection:
    """The cluster as it would be after the removal, and whether that is acceptable."""

    members_after: int
    healthy_after: int
    quorum_after: int
    threshold: int
    lost: tuple[str, ...]  # members counted as lost (unreachable or unhealthy)
    reasons: tuple[str, ...]

    @property
    def allowed(self) -> bool:
        return not self.reasons


def project(health: Sequence[MemberHealth], removing: Collection[int],
            threshold: int) -> Projection:
    """Count unreachable and unhealthy members as lost; refuse below quorum or threshold."""
    after = [h for h in health if h.member.id not in removing]
    healthy = sum(1 for h in after if h.healthy)
    lost = tuple(sorted(h.member.name for h in after if not h.healthy))
    need = quorum(len(after)) if after else 1
    reasons = []
    if not after:
        reasons.append("removing every member would destroy the cluster")
    elif healthy < need:
        reasons.append(f"only {healthy} of the remaining {len(after)} members would be "
                       f"healthy, below the quorum of {need}")
    if after and healthy < threshold:
        reasons.append(f"only {healthy} healthy members would remain, below the "
                       f"document's minimum_healthy_members of {threshold}")
    return Projection(len(after), healthy, need, threshold, lost, tuple(reasons))


def stable(health: Sequence[MemberHealth], ignoring: Collection[str], threshold: int) -> bool:
    """Healthy enough (quorum and threshold), not counting members named in `ignoring`."""
    rest = [h for h in health if h.member.name not in ignoring]
    healthy = sum(1 for h in rest if h.healthy)
    return bool(rest) and healthy >= max(quorum(len(rest)), threshold)


def voters_safe(health: Sequence[MemberHealth], threshold: int, *,
                promoting: bool = False) -> tuple[str, ...]:
    """Why a membership change would leave too few healthy voters (empty when it is safe).

    Learners do not vote: adding one keeps the quorum; promoting a caught-up one adds a voter
    and counts it healthy. Both the cluster before and the one after must keep quorum."""
    voters = [h for h in health if not h.member.is_learner]
    healthy = sum(1 for h in voters if h.healthy)
    reasons = []
    if not voters or healthy < quorum(len(voters)):
        reasons.append(f"only {healthy} of {len(voters)} voting members are healthy, below "
                       f"the quorum of {quorum(len(voters)) if voters else 1}")
    if promoting and healthy + 1 < quorum(len(voters) + 1):
        reasons.append(f"after the promotion {healthy + 1} of {len(voters) + 1} voting members "
                       f"would be healthy, below the quorum of {quorum(len(voters) + 1)}")
    if healthy < threshold:
        reasons.append(f"only {healthy} voting members are healthy, below the document's "
                       f"minimum_healthy_members of {threshold}")
    return tuple(reasons)
