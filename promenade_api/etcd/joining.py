"""Bring a redeployed node's etcd members back as learners; promote them once caught up."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from common.errors import BerthError
from common.poll import NotYet, poll
from common.status import Message, simple_message
from promenade_api.errors import (
    EtcdPeerUrlMissing,
    JoinEtcdError,
    JoinEtcdRefused,
    LearnerNotCaughtUp,
)
from promenade_api.etcd.model import ClusterSpec, Member, MemberHealth, Progress
from promenade_api.etcd.port import EtcdError, EtcdMemberNotFound, EtcdPort, EtcdRefused
from promenade_api.etcd.quorum import voters_safe
from promenade_api.etcd.removal import Lock

LOG = logging.getLogger(__name__)
# etcd's ErrMemberNotLearner: the leader has the member as a voter already (its "not in sync"
# refusal, ErrLearnerNotReady, goes on: "... a learner member which is in sync with leader")
NOT_A_LEARNER = "can only promote a learner member"


@dataclass(frozen=True)
class Lag:
    """How far a learner is behind the leader (raft entries), as last seen."""

    learner: int | None
    leader: int | None
    why: str = ""

    def caught_up(self, max_lag: int) -> bool:
        return self.learner is not None and self.leader is not None \
            and self.learner >= self.leader - max_lag

    def __str__(self) -> str:
        if self.learner is None or self.leader is None:
            return self.why or "its progress is unknown"
        return f"applied raft index {self.learner}, leader's {self.leader}"


class EtcdJoiner:
    """join-etcd: MemberAdd as learner, wait until in sync, check quorum, MemberPromote."""

    def __init__(self, etcd: EtcdPort, lock_for: Callable[[str], Lock], *,
                 clock: Callable[[], float], sleep: Callable[[float], None],
                 poll_interval: float = 0.5, max_lag: int = 10) -> None:
        self._etcd, self._lock_for = etcd, lock_for
        self._clock, self._sleep = clock, sleep
        self._poll, self._max_lag = poll_interval, max_lag

    def join_node(self, node: str, clusters: Sequence[ClusterSpec],
                  timeout: float) -> list[Message]:
        deadline = self._clock() + timeout
        messages: list[Message] = []
        for cluster in clusters:
            names = sorted(m for m, n in cluster.members.items() if n == node or m == node)
            if names:
                messages += self._locked(cluster, names, deadline)
        if not messages:
            messages.append(simple_message(f"The design gives {node} no etcd member",
                                           error=False))
        return messages

    def _locked(self, cluster: ClusterSpec, names: list[str],
                deadline: float) -> list[Message]:
        lock = self._lock_for(cluster.name)
        try:
            acquired = lock.acquire(max(0.0, deadline - self._clock()))
        except BerthError as exc:
            raise JoinEtcdError(f"Could not take the lease {lock.name} serialising membership "
                                f"changes of {cluster.name}; nothing was changed",
                                messages=[simple_message(exc.message)]) from exc
        if not acquired:
            raise JoinEtcdRefused(f"Another membership change of etcd cluster {cluster.name} "
                                  f"is still running (lease {lock.name}); nothing was changed")
        try:
            return [self._join(cluster, name, deadline, lock) for name in names]
        finally:
            lock.release()

    def _health(self, cluster: ClusterSpec) -> list[MemberHealth]:
        try:
            return [self._etcd.health(cluster, m) for m in self._etcd.members(cluster)]
        except EtcdError as exc:
            raise JoinEtcdError(f"etcd cluster {cluster.name} is not accessible; nothing was "
                                "changed", messages=[simple_message(exc.message)]) from exc

    def _join(self, cluster: ClusterSpec, name: str, deadline: float, lock: Lock) -> Message:
        peer = cluster.peer_urls.get(name)
        health = self._health(cluster)
        current = next((h.member for h in health if h.member.name == name
                        or (peer and peer in h.member.peer_urls)), None)
        if current is not None and not self._learner(cluster, current):
            return simple_message(f"Member {name} of {cluster.name} is already a voting "
                                  "member; nothing was changed", error=False,
                                  cluster=cluster.name, member=name, role="voter")
        if current is None:
            current = self._add(cluster, name, peer, health, deadline)
        lock.renew()
        lag = self._await_caught_up(cluster, current, deadline, lock)
        self._promote(cluster, name, current, deadline, lock)
        return simple_message(f"Member {name} of {cluster.name} joined as a learner and was "
                              f"promoted to a voting member once in sync ({lag})", error=False,
                              cluster=cluster.name, member=name, role="voter")

    def _refuse_unless_safe(self, cluster: ClusterSpec, name: str, what: str,
                            health: Sequence[MemberHealth], promoting: bool) -> None:
        reasons = voters_safe(health, cluster.min_healthy, promoting=promoting)
        if reasons:
            raise JoinEtcdRefused(
                f"{what} {name} in etcd cluster {cluster.name} now could leave it without "
                "quorum; nothing was changed",
                messages=[simple_message(r, cluster=cluster.name) for r in reasons]
                + [simple_message(f"{h.member.name or h.member.id}: "
                                  f"{'learner' if h.member.is_learner else 'voter'}, "
                                  f"{h.status} {h.error}".strip(), error=False)
                   for h in health],
                details={"cluster": cluster.name, "member": name})

    def _add(self, cluster: ClusterSpec, name: str, peer: str | None,
             health: Sequence[MemberHealth], deadline: float) -> Member:
        if not peer:
            raise EtcdPeerUrlMissing(f"The design's EtcdClusters document gives member {name} "
                                     f"of {cluster.name} no peer_url; nothing was changed")
        others = [h.member.name or str(h.member.id) for h in health if h.member.is_learner]
        if others:
            raise JoinEtcdRefused(f"etcd cluster {cluster.name} already has a learner "
                                  f"({', '.join(others)}); it admits one at a time; nothing "
                                  "was changed", details={"cluster": cluster.name,
                                                          "learners": others})
        self._refuse_unless_safe(cluster, name, "Adding", health, promoting=False)
        LOG.info("join-etcd: adding %s (%s) to %s as a learner", name, peer, cluster.name)
        tries = 0

        def add() -> Member | NotYet[EtcdRefused]:
            nonlocal tries
            if tries:  # checked again before each retry
                self._refuse_unless_safe(cluster, name, "Adding", self._health(cluster),
                                         promoting=False)
            tries += 1
            try:
                return self._etcd.add_learner(cluster, peer)
            except EtcdRefused as exc:  # e.g. a voter connected for under 5 s: retried
                return NotYet(exc)
            except EtcdError as exc:
                raise JoinEtcdError(f"etcd did not add {name} to {cluster.name} as a learner",
                                    messages=[simple_message(exc.message)]) from exc

        def refused(exc: EtcdRefused) -> Member:
            raise JoinEtcdRefused(f"etcd refused to add {name} to {cluster.name} as a "
                                  "learner; nothing was changed",
                                  messages=[simple_message(exc.message)]) from exc

        return poll(add, deadline=deadline, interval=self._poll, expire=refused, whole=True,
                    between=lambda exc: LOG.info("join-etcd: etcd refused the learner for "
                                                 "now: %s", exc.message),
                    clock=self._clock, sleep=self._sleep)

    def _lag(self, cluster: ClusterSpec, learner: Member) -> Lag:
        try:
            members = {m.id: m for m in self._etcd.members(cluster)}
            current = members.get(learner.id)
            if current is None:
                return Lag(None, None, "it is no longer a member")
            if not current.started:
                return Lag(None, None, "its etcd has not started")
            own: Progress = self._etcd.progress(cluster, current)
            leader = members.get(own.leader_id or 0)
            if leader is None:
                return Lag(own.applied_index, None, "it sees no leader")
            return Lag(own.applied_index, self._etcd.progress(cluster, leader).raft_index)
        except EtcdError as exc:
            return Lag(None, None, exc.message)

    def _await_caught_up(self, cluster: ClusterSpec, learner: Member, deadline: float,
                         lock: Lock) -> Lag:
        def caught_up() -> Lag | NotYet[Lag]:
            lag = self._lag(cluster, learner)
            return lag if lag.caught_up(self._max_lag) else NotYet(lag)

        def behind(lag: Lag) -> None:
            LOG.info("join-etcd: learner %x of %s not in sync yet: %s", learner.id,
                     cluster.name, lag)
            lock.renew()

        def late(lag: Lag) -> Lag:
            self._give_up(cluster, learner, f"it did not catch up in time: {lag}")
            return lag

        return poll(caught_up, deadline=deadline, interval=self._poll, expire=late,
                    between=behind, clock=self._clock, sleep=self._sleep)

    def _promote(self, cluster: ClusterSpec, name: str, learner: Member, deadline: float,
                 lock: Lock) -> None:
        """MemberPromote after a quorum check; etcd's own "not in sync" is retried until the
        deadline (each retry checks quorum again)."""
        def promote() -> bool | NotYet[EtcdRefused]:
            health = [h for h in self._health(cluster) if h.member.id != learner.id]
            self._refuse_unless_safe(cluster, name, "Promoting", health, promoting=True)
            try:
                self._etcd.promote(cluster, learner)
                return True
            except EtcdRefused as exc:
                if exc.message.endswith(NOT_A_LEARNER):  # the leader has it as a voter
                    return True
                return NotYet(exc)
            except EtcdError as exc:
                raise JoinEtcdError(f"Could not promote {name} in {cluster.name}; it stays a "
                                    "learner", messages=[simple_message(exc.message)]) from exc

        def refused(exc: EtcdRefused) -> None:
            LOG.info("join-etcd: etcd refused the promotion for now: %s", exc.message)
            lock.renew()

        def give_up(exc: EtcdRefused) -> bool:
            self._give_up(cluster, learner, f"etcd refused to promote it: {exc.message}")
            return False

        poll(promote, deadline=deadline, interval=self._poll, expire=give_up, whole=True,
             between=refused, clock=self._clock, sleep=self._sleep)

    def _learner(self, cluster: ClusterSpec, member: Member) -> bool:
        """Whether `member` is a learner. A member list may be served by a member that has
        not applied a promotion yet: a member the list shows as a learner is asked itself
        (its own raft status), and counts as a learner unless it says it votes."""
        if not member.is_learner:
            return False
        try:
            return self._etcd.progress(cluster, member).is_learner
        except EtcdError:
            return True

    def _give_up(self, cluster: ClusterSpec, learner: Member, why: str) -> None:
        """Remove the learner again (a learner does not vote: quorum is untouched) and fail."""
        undone = "the learner was removed again; the cluster is as it was"
        try:
            if not self._learner(cluster, learner):  # never remove a voter here
                raise LearnerNotCaughtUp(
                    f"Member {learner.name or learner.id} of etcd cluster {cluster.name} is a "
                    f"voting member now, though the join saw it a learner ({why}); it was left "
                    "as it is", details={"cluster": cluster.name, "member": learner.name,
                                         "promoted": True})
            self._etcd.remove_member(cluster, learner)
        except EtcdMemberNotFound:
            pass
        except EtcdError as exc:
            undone = f"removing the learner again failed ({exc.message}); it stays a learner"
        raise LearnerNotCaughtUp(
            f"Learner {learner.name or learner.id} of etcd cluster {cluster.name} was not "
            f"promoted: {why}; {undone}",
            details={"cluster": cluster.name, "member": learner.name, "promoted": False})
