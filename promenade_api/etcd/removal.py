"""Remove a node's etcd members without breaking quorum; report and await cluster health."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from common.errors import BerthError
from common.poll import NotYet, doubling, poll
from common.status import Message, health_message, simple_message
from promenade_api.errors import EtcdNotAccessible, RemoveEtcdError
from promenade_api.etcd.model import ClusterSpec, Member, MemberHealth
from promenade_api.etcd.port import (
    EtcdError,
    EtcdMemberNotFound,
    EtcdPort,
    EtcdRefused,
    EtcdUnreachable,
)
from promenade_api.etcd.quorum import project, stable

LOG = logging.getLogger(__name__)
FIRST_LOOK = 0.5  # the first wait of a backoff up to poll_interval (etcd heals in seconds)


class Lock(Protocol):
    @property
    def name(self) -> str: ...

    def acquire(self, timeout: float) -> bool: ...

    def renew(self) -> None: ...

    def release(self) -> None: ...


class EtcdRemover:
    """remove-etcd, etcd-cluster-health-statuses and decommission's stability wait.

    Its waits (a refused removal, the removal's confirmation, the clusters' stability) look
    again FIRST_LOOK s after the first look, then twice as long each time, at most every
    `poll_interval` s: etcd's refusals last seconds (a member connected for under 5 s), so
    a 30 s interval is the bound of a long wait, not the delay of every one."""

    def __init__(self, etcd: EtcdPort, lock_for: Callable[[str], Lock], *,
                 clock: Callable[[], float], sleep: Callable[[float], None],
                 poll_interval: float = 1.0) -> None:
        self._etcd, self._lock_for = etcd, lock_for
        self._clock, self._sleep, self._poll = clock, sleep, poll_interval
        self._backoff = doubling(min(FIRST_LOOK, poll_interval), poll_interval)

    def health(self, cluster: ClusterSpec) -> list[MemberHealth]:
        members = sorted(self._etcd.members(cluster), key=lambda m: (m.name, m.id))
        return [self._etcd.health(cluster, m) for m in members]

    # -- remove-etcd -------------------------------------------------------------------
    def remove_node(self, node: str, clusters: Sequence[ClusterSpec],
                    timeout: int) -> list[Message]:
        deadline = self._clock() + timeout
        messages: list[Message] = []
        for cluster in clusters:
            if cluster.may_have_member_on(node):
                messages += self._remove_from(cluster, node, deadline)
        if not messages:
            messages.append(simple_message(f"{node} has no etcd members", error=False))
        return messages

    def _remove_from(self, cluster: ClusterSpec, node: str, deadline: float) -> list[Message]:
        lock = self._lock_for(cluster.name)
        try:
            acquired = lock.acquire(max(0.0, deadline - self._clock()))
        except BerthError as exc:
            raise RemoveEtcdError(f"Could not take the lease {lock.name} serialising removals "
                                  f"from {cluster.name}; nothing was changed",
                                  messages=[simple_message(exc.message)]) from exc
        if not acquired:
            raise RemoveEtcdError(f"Another removal from etcd cluster {cluster.name} is still "
                                  f"running (lease {lock.name}); nothing was changed")
        try:
            return self._remove_locked(cluster, node, deadline, lock)
        finally:
            lock.release()

    def _remove_locked(self, cluster: ClusterSpec, node: str, deadline: float,
                       lock: Lock) -> list[Message]:
        names = cluster.member_names_of(node)
        try:
            health = self.health(cluster)
        except EtcdError as exc:
            raise RemoveEtcdError(f"etcd cluster {cluster.name} is not accessible; nothing "
                                  "was changed", messages=[simple_message(exc.message)]) from exc
        targets = [h.member for h in health if h.member.name in names]
        if not targets:
            return [simple_message(f"{node} has no member in etcd cluster {cluster.name} "
                                   "(already removed)", error=False, cluster=cluster.name)]
        verdict = project(health, {m.id for m in targets}, cluster.min_healthy)
        learners = [h.member.name or str(h.member.id) for h in health
                    if h.member.is_learner or "learner" in h.error.lower()]
        if learners:
            raise RemoveEtcdError(
                f"etcd cluster {cluster.name} has a learner ({', '.join(learners)}) being "
                "added; no member is removed until it is promoted; nothing was changed",
                details={"cluster": cluster.name, "learners": learners})
        if not verdict.allowed:
            raise RemoveEtcdError(
                f"Removing {node} from etcd cluster {cluster.name} would break it; nothing "
                "was changed",
                messages=[simple_message(r, cluster=cluster.name) for r in verdict.reasons]
                + [simple_message(f"{h.member.name}: {h.status} {h.error}".strip(),
                                  error=False) for h in health],
                details={"cluster": cluster.name, "lost_members": list(verdict.lost)})
        out = []
        for member in targets:
            dead = next((h for h in health if h.member.id == member.id and not h.reachable),
                        None)
            if dead is not None:
                out.append(simple_message(
                    f"Member {member.name} of {cluster.name} is down ({dead.error}); it was "
                    "counted as lost and removed", error=False, cluster=cluster.name))
            self._move_leadership(cluster, member, health, deadline)
            lock.renew()
            self._remove_and_confirm(cluster, member, deadline, lock.renew)
            out.append(simple_message(f"Removed member {member.name} from etcd cluster "
                                      f"{cluster.name}", error=False, cluster=cluster.name))
        return out

    def _move_leadership(self, cluster: ClusterSpec, member: Member,
                         health: Sequence[MemberHealth], deadline: float) -> None:
        leaders = {h.leader_id for h in health if h.healthy and h.leader_id}
        if member.id not in leaders:
            return
        target = self._successor(cluster, member, health)
        LOG.info("remove-etcd: moving leadership of %s from %s to %s", cluster.name,
                 member.name, target.name)
        try:
            self._etcd.move_leader(cluster, member, target)
        except EtcdError as exc:
            raise RemoveEtcdError(f"Could not move leadership of {cluster.name} off "
                                  f"{member.name}; nothing was removed",
                                  messages=[simple_message(exc.message)]) from exc
        def moved() -> bool | NotYet[None]:
            return self._etcd.health(cluster, target).leader_id != member.id or NotYet()

        def stuck(_: None) -> bool:
            raise RemoveEtcdError(f"Leadership of {cluster.name} did not leave "
                                  f"{member.name} in time; nothing was removed")

        poll(moved, deadline=deadline, interval=min(self._poll, 0.2), expire=stuck,
             clock=self._clock, sleep=self._sleep)

    def _successor(self, cluster: ClusterSpec, member: Member,
                   health: Sequence[MemberHealth]) -> Member:
        """The healthy voter furthest along the leader's log (never a learner)."""
        def applied(candidate: Member) -> int:
            try:
                return self._etcd.progress(cluster, candidate).applied_index
            except EtcdError:
                return -1

        voters = [h.member for h in health if h.healthy and not h.member.is_learner
                  and h.member.id != member.id]
        if not voters:
            raise RemoveEtcdError(f"No healthy voting member of {cluster.name} could take "
                                  f"over from the leader {member.name}; nothing was removed")
        return max(voters, key=applied)

    def _remove_and_confirm(self, cluster: ClusterSpec, member: Member, deadline: float,
                            renew: Callable[[], None]) -> None:
        LOG.info("remove-etcd: removing member %s (%x) from %s", member.name, member.id,
                 cluster.name)
        self._remove_retrying(cluster, member, deadline, renew)

        def gone() -> bool | NotYet[None]:
            try:
                return member.id not in {m.id for m in self._etcd.members(cluster)} or NotYet()
            except EtcdUnreachable as exc:
                LOG.info("remove-etcd: confirming removal: %s", exc.message)
                return NotYet()

        def unconfirmed(_: None) -> bool:
            raise RemoveEtcdError(f"Removal of {member.name} from {cluster.name} was not "
                                  "confirmed before the timeout")

        poll(gone, deadline=deadline, interval=self._backoff, expire=unconfirmed,
             clock=self._clock, sleep=self._sleep)

    def _remove_retrying(self, cluster: ClusterSpec, member: Member, deadline: float,
                         renew: Callable[[], None]) -> None:
        """MemberRemove; etcd's own refusals (e.g. members connected for under 5 s) are
        retried until the deadline, since our projection already found the removal safe."""
        def remove() -> bool | NotYet[EtcdRefused]:
            try:
                self._etcd.remove_member(cluster, member)
            except EtcdMemberNotFound:
                LOG.info("remove-etcd: %s was already gone from %s", member.name, cluster.name)
            except EtcdRefused as exc:
                return NotYet(exc)
            except EtcdError as exc:
                raise RemoveEtcdError(f"Could not remove {member.name} from {cluster.name}",
                                      messages=[simple_message(exc.message)]) from exc
            return True

        def refused(exc: EtcdRefused) -> None:
            LOG.info("remove-etcd: etcd refused for now (%s); retrying", exc.message)
            renew()

        def give_up(exc: EtcdRefused) -> bool:
            raise RemoveEtcdError(f"etcd refused to remove {member.name} from {cluster.name}",
                                  messages=[simple_message(exc.message)]) from exc

        poll(remove, deadline=deadline, interval=self._backoff, expire=give_up, whole=True,
             between=refused, clock=self._clock, sleep=self._sleep)

    # -- health statuses ---------------------------------------------------------------
    def health_messages(self, clusters: Sequence[ClusterSpec]) -> list[Message]:
        """One HealthMessage per member; 500 EtcdNotAccessible when no cluster answers."""
        messages: list[Message] = []
        answered = 0
        for cluster in clusters:
            try:
                health = self.health(cluster)
                answered += 1
            except EtcdError as exc:
                LOG.info("etcd health: cluster %s: %s", cluster.name, exc.message)
                messages += [health_message(f"{cluster.name}/{m}", "Unable to access Etcd",
                                            error=True) for m in sorted(cluster.members)]
                continue
            messages += [health_message(f"{cluster.name}/{h.member.name}", h.status,
                                        error=not h.reachable) for h in health]
        if clusters and not answered:
            raise EtcdNotAccessible("No etcd cluster of the design could be reached",
                                    messages=messages)
        return messages

    # -- stability -----------------------------------------------------------------------
    def wait_stable(self, node: str, clusters: Sequence[ClusterSpec],
                    timeout: int) -> dict[str, list[str]]:
        """Poll until every cluster keeps quorum and threshold without the node's members."""
        deadline = self._clock() + timeout
        clusters = [c for c in clusters if c.may_have_member_on(node)]  # only if impacted

        def stable_now() -> dict[str, list[str]] | NotYet[list[str]]:
            unstable = [c.name for c in clusters if not self._stable(c, node)]
            return NotYet(unstable) if unstable else {"stable": [c.name for c in clusters]}

        def unstable(names: list[str]) -> dict[str, list[str]]:
            raise RemoveEtcdError(f"etcd clusters {', '.join(names)} did not become "
                                  f"stable within {timeout}s")

        return poll(stable_now, deadline=deadline, interval=self._backoff, expire=unstable,
                    between=lambda names: LOG.info("decommission %s: waiting for etcd "
                                                   "clusters %s", node, ", ".join(names)),
                    clock=self._clock, sleep=self._sleep)

    def _stable(self, cluster: ClusterSpec, node: str) -> bool:
        try:
            return stable(self.health(cluster), cluster.member_names_of(node),
                          cluster.min_healthy)
        except EtcdError:
            return False
