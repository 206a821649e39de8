"""etcd clusters as the EtcdClusters document describes them, and members as etcd reports them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TlsFiles:
    """Paths of the client TLS material (PEM files)."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class ClusterSpec:
    """One cluster of the `promenade/EtcdClusters/v1` document."""

    name: str
    endpoints: tuple[str, ...]
    members: dict[str, str] = field(default_factory=dict)  # member name -> node name
    peer_urls: dict[str, str] = field(default_factory=dict)  # member name -> its peer URL
    min_healthy: int = 0
    tls: TlsFiles = TlsFiles()

    def may_have_member_on(self, node: str) -> bool:
        """False only when the document lists the cluster's members and none is on `node`
        (such a cluster is not impacted by the node and is not even asked)."""
        return not self.members or node in self.members or node in self.members.values()

    def member_names_of(self, node: str) -> set[str]:
        """Member names that live on `node` (a member named like the node counts too)."""
        names = {m for m, n in self.members.items() if n == node}
        if node not in self.members:
            names.add(node)
        return names


@dataclass(frozen=True)
class Member:
    """A member as MemberList reports it."""

    id: int
    name: str
    peer_urls: tuple[str, ...] = ()
    client_urls: tuple[str, ...] = ()
    is_learner: bool = False

    @property
    def started(self) -> bool:
        """An added member that has not started yet has no name and no client URLs."""
        return bool(self.client_urls)


@dataclass(frozen=True)
class Progress:
    """What a member's Status says of its raft log: how far it has committed and applied."""

    raft_index: int
    applied_index: int
    leader_id: int | None
    is_learner: bool = False


@dataclass(frozen=True)
class MemberHealth:
    """What one member answered: reachable, healthy (a linearizable read), who leads."""

    member: Member
    reachable: bool
    healthy: bool
    leader_id: int | None = None
    error: str = ""

    @property
    def status(self) -> str:
        if not self.reachable:
            return "Unable to access Etcd"
        return "Healthy" if self.healthy else "Unhealthy"
