"""An in-memory EtcdPort for unit tests: members, health, leader, refusals."""

from __future__ import annotations

import threading

from promenade_api.etcd.model import ClusterSpec, Member, MemberHealth, Progress
from promenade_api.etcd.port import EtcdMemberNotFound, EtcdRefused, EtcdUnreachable


class FakeEtcd:
    """Clusters by name; `down` members are unreachable, `unhealthy` ones answer but fail reads."""

    def __init__(self) -> None:
        self.clusters: dict[str, list[Member]] = {}
        self.leaders: dict[str, int] = {}
        self.down: set[str] = set()
        self.unhealthy: set[str] = set()
        self.learners: set[str] = set()  # answer, but refuse linearizable reads as learners do
        self.unreachable_clusters: set[str] = set()
        self.removed: list[str] = []
        self.moves: list[tuple[str, str]] = []
        self.refuse_removal = False
        self.applied: dict[str, int] = {}  # member name -> applied index (default: in sync)
        self.log_index = 100  # the leader's raft index
        self.promotions: list[str] = []
        self.peer_names: dict[str, str] = {}  # peer URL -> the name its etcd starts with
        # members the member list still shows as learners after their promotion (a list
        # served by a member that has not applied it yet; the leader knows better)
        self.stale_learners: set[str] = set()
        self._lock = threading.Lock()

    def add_cluster(self, name: str, members: list[str], leader: str | None = None) -> None:
        self.clusters[name] = [Member(id=i + 1, name=m, client_urls=(f"http://{m}:2379",))
                               for i, m in enumerate(members)]
        lead = leader or members[0]
        self.leaders[name] = next(m.id for m in self.clusters[name] if m.name == lead)

    def leader_name(self, cluster: str) -> str | None:
        return next((m.name for m in self.clusters[cluster] if m.id == self.leaders[cluster]),
                    None)

    def members(self, cluster: ClusterSpec) -> list[Member]:
        if cluster.name in self.unreachable_clusters or cluster.name not in self.clusters:
            raise EtcdUnreachable(f"No etcd endpoint of {cluster.name} answered")
        return [Member(m.id, m.name, m.peer_urls, m.client_urls, is_learner=True)
                if m.name in self.stale_learners else m for m in self.clusters[cluster.name]]

    def _current(self, cluster: ClusterSpec, member: Member) -> Member:
        return next((m for m in self.clusters[cluster.name] if m.id == member.id), member)

    def health(self, cluster: ClusterSpec, member: Member) -> MemberHealth:
        if member.name in self.down or cluster.name in self.unreachable_clusters:
            return MemberHealth(member, reachable=False, healthy=False, error="connection refused")
        leader = self.leaders.get(cluster.name)
        if member.is_learner or member.name in self.learners:
            return MemberHealth(member, reachable=True, healthy=False, leader_id=leader,
                                error="etcdserver: rpc not supported for learner")
        return MemberHealth(member, reachable=True, healthy=member.name not in self.unhealthy,
                            leader_id=leader)

    def move_leader(self, cluster: ClusterSpec, leader: Member, target: Member) -> None:
        with self._lock:
            self.moves.append((leader.name, target.name))
            self.leaders[cluster.name] = target.id

    def remove_member(self, cluster: ClusterSpec, member: Member) -> None:
        with self._lock:
            if self.refuse_removal:
                raise EtcdRefused("etcd remove member: unhealthy cluster")
            members = self.clusters[cluster.name]
            if member.id not in {m.id for m in members}:
                raise EtcdMemberNotFound("etcd remove member: member not found")
            self.clusters[cluster.name] = [m for m in members if m.id != member.id]
            self.removed.append(member.name)

    def progress(self, cluster: ClusterSpec, member: Member) -> Progress:
        if member.name in self.down or not member.client_urls:
            raise EtcdUnreachable(f"etcd member {member.name} did not answer")
        return Progress(raft_index=self.log_index,
                        applied_index=self.applied.get(member.name, self.log_index),
                        leader_id=self.leaders.get(cluster.name),
                        is_learner=self._current(cluster, member).is_learner)

    def add_learner(self, cluster: ClusterSpec, peer_url: str) -> Member:
        with self._lock:
            members = self.clusters[cluster.name]
            name = self.peer_names.get(peer_url, "")
            member = Member(id=max((m.id for m in members), default=0) + 1, name=name,
                            peer_urls=(peer_url,), is_learner=True,
                            client_urls=(f"http://{name}:2379",) if name else ())
            members.append(member)
            return member

    def promote(self, cluster: ClusterSpec, member: Member) -> None:
        with self._lock:
            members = self.clusters[cluster.name]
            current = next((m for m in members if m.id == member.id), None)
            if current is None:
                raise EtcdMemberNotFound("etcd promote member: member not found")
            if not current.is_learner:  # etcd's ErrMemberNotLearner
                raise EtcdRefused("etcdserver: can only promote a learner member")
            if current.name in self.down or self.applied.get(current.name, self.log_index) \
                    < self.log_index * 0.9:
                raise EtcdRefused("etcdserver: can only promote a learner member which is in "
                                  "sync with leader")
            self.clusters[cluster.name] = [
                Member(m.id, m.name, m.peer_urls, m.client_urls) if m.id == member.id else m
                for m in members]
            self.promotions.append(current.name)
