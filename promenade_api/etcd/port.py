"""The EtcdPort interface and its errors.

    EtcdError (500)
    ├── EtcdUnreachable     no endpoint answered (network failure, timeout)
    ├── EtcdRefused         etcd refused the change (e.g. it would lose quorum)
    └── EtcdMemberNotFound  the member is not (or no longer) in the cluster
"""

from __future__ import annotations

from typing import Protocol

from common.errors import BerthError
from promenade_api.etcd.model import ClusterSpec, Member, MemberHealth, Progress


class EtcdError(BerthError):
    code, reason, title, retry = 500, "EtcdError", "etcd error", True


class EtcdUnreachable(EtcdError):
    reason, title = "EtcdUnreachable", "etcd unreachable"


class EtcdRefused(EtcdError):
    reason, title, retry = "EtcdRefused", "etcd refused the change", False


class EtcdMemberNotFound(EtcdError):
    reason, title, retry = "EtcdMemberNotFound", "etcd member not found", False


class EtcdPort(Protocol):
    """etcd cluster membership and health; implemented over python3-etcd3 and by a fake."""

    def members(self, cluster: ClusterSpec) -> list[Member]:
        """MemberList from the first endpoint that answers; EtcdUnreachable otherwise."""

    def health(self, cluster: ClusterSpec, member: Member) -> MemberHealth:
        """Ask the member itself: status (leader) and a linearizable read."""

    def move_leader(self, cluster: ClusterSpec, leader: Member, target: Member) -> None:
        """Ask the leader to hand leadership to `target`."""

    def remove_member(self, cluster: ClusterSpec, member: Member) -> None:
        """MemberRemove through an endpoint other than the member's own."""

    def progress(self, cluster: ClusterSpec, member: Member) -> Progress:
        """The member's own Status (a learner answers it too); EtcdUnreachable otherwise."""

    def add_learner(self, cluster: ClusterSpec, peer_url: str) -> Member:
        """MemberAdd with isLearner: the new member, which does not vote until promoted."""

    def promote(self, cluster: ClusterSpec, member: Member) -> None:
        """MemberPromote; EtcdRefused while the learner is not in sync with the leader."""
